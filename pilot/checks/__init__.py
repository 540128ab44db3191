"""The pilot's checks. Each returns a ``CheckResult`` with a verdict and a one-line reason."""
