"""pilot: one complete step before a thousand experiments."""
__version__ = "0.1.0"
