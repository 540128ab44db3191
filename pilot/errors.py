"""One exception hierarchy (STYLE.md rule 13, submitit style).

What the user can fix is a ``PilotError``: ``python -m pilot`` prints its message
without a traceback and exits 2. Anything else is pilot's own bug and keeps its
traceback. This module is a leaf: every layer may import it.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import traceback
from contextlib import contextmanager, suppress
from pathlib import Path

from pilot.startup_signals import error_chain


class PilotError(Exception):
    """A problem the user can fix; the message names the key or file, the value and the fix."""

    exit_code = 2


class ConfigRefused(PilotError, ValueError):
    """A setting, or a combination of settings, that cannot run (see pilot.validation.ConfigError)."""


class ResumeRefused(PilotError, ValueError):
    """The run directory's checkpoint or record forbids continuing it as asked."""


class UnsafeFileError(PilotError, RuntimeError):
    """A file that would need arbitrary unpickling or would run code named inside it: refused."""


class RunDirectoryBusy(PilotError, RuntimeError):
    """Another process holds the run directory's lock."""


class DiskFull(PilotError, OSError):
    """No space left while writing a file of the run; the message names the file and the space needed."""


@contextmanager
def disk_full_guard(path: Path, tmp: Path | None = None, needed_bytes: int | None = None):
    """Turn ENOSPC while writing ``path`` into one ``DiskFull`` naming the file and the space needed.

    The temporary file of the interrupted write is removed first (it holds the space the
    rest of the run's records need); what was written before is untouched.
    """
    try:
        yield
    except Exception as error:
        written = 0
        if tmp is not None:
            with suppress(OSError):  # a file, or a directory of shards
                written = sum(p.stat().st_size for p in tmp.iterdir()) if tmp.is_dir() else tmp.stat().st_size
        free = None
        with suppress(OSError):
            free = shutil.disk_usage(Path(path).parent).free
        no_space = _says_no_space(error) or (
            # torch.save reports a failed write as a RuntimeError without errno ("unexpected pos")
            isinstance(error, RuntimeError)
            and needed_bytes is not None
            and free is not None
            and free < needed_bytes - written + 65536
        )
        if not no_space:
            raise
        if tmp is not None:
            with suppress(OSError):
                shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
        raise _disk_full(path, needed_bytes or written) from None


CPU_ALLOCATOR_REFUSED = ("DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory")


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is the device running out of memory: CUDA's ``OutOfMemoryError``, Python's
    ``MemoryError``, or the CPU allocator's refusal, which PyTorch raises as a plain ``RuntimeError``
    ("DefaultCPUAllocator: can't allocate memory: you tried to allocate 225312768 bytes")."""
    import torch  # noqa: PLC0415 - errors is imported before torch by the entry point's fast paths

    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(error, RuntimeError) and any(mark in str(error) for mark in CPU_ALLOCATOR_REFUSED)


OUT_OF_MEMORY_FIX = (
    "Fix: a smaller batch.micro_batch (or data.max_len, a smaller model), or a machine with more free memory"
)


def out_of_memory_line(error: BaseException) -> str:
    """One line for an out-of-memory error: the size the CPU allocator refused, in GiB, where it says it."""
    found = re.search(r"you tried to allocate (\d+) bytes", str(error))
    if found:
        return f"an allocation of {int(found.group(1)) / 1024**3:.2f} GiB was refused ({type(error).__name__})"
    return f"{type(error).__name__}: {first_line(error, 300)}"


def no_space_left(error: BaseException, writing: Path | str | None = None) -> DiskFull | None:
    """``error`` as one ``DiskFull`` naming its file when it is "no space left" (ENOSPC, EDQUOT)
    raised anywhere a run writes (an export, a metrics line, the predictions), else None.
    ``writing``: what was being written, when the error does not name a file."""
    if isinstance(error, DiskFull):
        return error
    cause = next((e for e in error_chain(error) if _says_no_space(e)), None)  # logging wraps it: ValueError
    if cause is None:
        return None
    return _disk_full(getattr(cause, "filename", None) or writing, None)


def user_error(error: BaseException) -> PilotError | None:
    """The ``PilotError`` (a message the user can act on) behind ``error``: Hydra wraps what a model's
    builder raises in an InstantiationException, whose own text is only 'Error in call to target'."""
    return next((e for e in error_chain(error) if isinstance(e, PilotError)), None)


DISK_FULL = "disk full: "  # how a step's or a phase's detail starts when no space stopped it (then its message)
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
RUST_NO_SPACE = tuple(f"(os error {code})" for code in NO_SPACE)  # how safetensors' writer reports them


def file_in_the_way(path: Path | str) -> Path | None:
    """The file where ``path`` or one of the directories above it should be a directory (what refused
    making or writing it: ``File exists``, ``Not a directory``), or None."""
    path = Path(path)
    return next((p for p in [path, *path.parents] if p.exists() and not p.is_dir()), None)


def _says_no_space(error: BaseException) -> bool:
    return getattr(error, "errno", None) in NO_SPACE or any(mark in str(error) for mark in RUST_NO_SPACE)


def _disk_full(path: Path | str | None, needed: int | None) -> DiskFull:
    """``path``: the file being written (None: the error did not say; then neither is a free size)."""
    free = None
    with suppress(OSError, TypeError):
        free = shutil.disk_usage(Path(path).parent).free
    short = needed is not None and free is not None and needed > free  # else the size said would contradict
    return DiskFull(
        f"no space left on the device writing {path or 'a file of the run'}: "
        + (f"about {needed:,} bytes needed, " if short else "")
        + (f"{free:,} bytes free now. " if free is not None else "")
        + "Nothing written before was changed (any earlier checkpoint or record is intact). "
        "Fix: free space on that file system (or move the run directory), then start the same "
        "command again: a training run resumes from its newest valid checkpoint, or from update 0 "
        "where none was saved (a pilot or an estimate starts afresh: leave out hydra.run.dir for a new directory)."
    )


SAME_COMMAND = "then start the same command again"  # the fix's last sentence, for a single run


def for_one_job(message: str, job_command: str) -> str:
    """``message`` with its fix's "start the same command again" made a sweep job's own command: the sweep's -m
    command would start every job again in new directories, the failed one never continued."""
    at = message.find(SAME_COMMAND)
    if at < 0:
        return message
    return f"{message[:at]}then {job_command} (the sweep's -m command would start every job again in new directories)."


class AccessDenied(PilotError, OSError):
    """The operating system refused to read or write a file of the run (permissions, an immutable
    file, a read-only file system); the message names the file and the fix."""


RECORD_CLAIM = "run.json says where the run stopped"  # __main__ says otherwise where run.json could not record it
DENIED = {errno.EACCES: "EACCES", errno.EPERM: "EPERM", errno.EROFS: "EROFS"}


def access_denied(error: BaseException) -> AccessDenied | None:
    """``error`` as one ``AccessDenied`` naming its file when the system refused a file operation
    anywhere in the run (a checkpoint, a record, the export), else None. Only an error that names its
    file: a denial without one is not said as something the user can fix."""
    cause = next(
        (e for e in error_chain(error) if getattr(e, "errno", None) in DENIED and getattr(e, "filename", None)), None
    )
    if cause is None:
        return None
    return AccessDenied(
        f"the system refused access to {cause.filename} ({cause.strerror}, {DENIED[cause.errno]}). "
        f"What was written before is untouched (earlier checkpoints and records are intact; {RECORD_CLAIM}). "
        "Fix: give this user read and write access to that path (chmod/chown; "
        "`chattr -i` for an immutable one; remount a read-only file system), then start the same command "
        "again: a training run resumes from its newest valid checkpoint."
    )


class FileInTheWay(PilotError, OSError):
    """A file stands where the run writes a directory (``export``, ``checkpoints``), or a directory where it
    writes a file: the message names it."""


def in_the_way(error: BaseException) -> FileInTheWay | None:
    """``error`` as one ``FileInTheWay`` when making or writing a directory of the run failed on a file
    standing in its place (``File exists``, ``Not a directory``), or writing a file on a directory standing
    in its place (``Is a directory``), else None."""
    for cause in error_chain(error):
        names = [name for name in (getattr(cause, "filename", None), getattr(cause, "filename2", None)) if name]
        if getattr(cause, "errno", None) == errno.EISDIR and names:  # os.replace(staged, final): the final one
            directory = next((name for name in names if os.path.isdir(name)), names[-1])
            return FileInTheWay(
                f"{directory} is a directory where the run writes a file. What was written before is untouched "
                f"(earlier checkpoints and records are intact; {RECORD_CLAIM}). Fix: move that directory away, "
                "then start the same command again: a training run resumes from its newest valid checkpoint."
            )
        if getattr(cause, "errno", None) in (errno.EEXIST, errno.ENOTDIR) and getattr(cause, "filename", None):
            blocking = file_in_the_way(cause.filename)
            if blocking is not None:
                return FileInTheWay(
                    f"{blocking} is a file where the run writes a directory ({cause.filename}: {cause.strerror}). "
                    f"What was written before is untouched (earlier checkpoints and records are intact; {RECORD_CLAIM}). "
                    "Fix: move that file away, then start the same command again: a "
                    "training run resumes from its newest valid checkpoint."
                )
    return None


class RunFinished(PilotError):
    """The run directory holds a run that already ended: nothing is done, nothing is touched."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def failure_summary(stderr: str, limit: int = 300) -> str:
    """The first meaningful line of the last exception in a child process's ``stderr``: its
    ``Type: message`` line, or, when the message starts on the next line (safetensors' shared-tensor
    ``RuntimeError:``), the type joined with that line; never an empty ``RuntimeError:``."""
    lines = [line.rstrip() for line in stderr.strip().splitlines()]
    frames = [i for i, line in enumerate(lines) if line.lstrip().startswith('File "')]
    start = frames[-1] + 1 if frames else 0
    block = [line for line in lines[start:] if line and not line.startswith((" ", "\t"))]
    block = block or [line.strip() for line in lines if line.strip()]
    if not block:
        return "no output"
    head, rest = block[0], [line.strip() for line in lines[start:] if line.strip()]
    if head.endswith(":"):  # the message begins on a later (possibly indented) line
        after = rest[rest.index(head) + 1 :] if head in rest else []
        head = f"{head} {after[0]}" if after else f"{head} (no message)"
    return head[:limit]


INCOMPLETE = "incomplete"  # a check's verdict when its process was killed before it answered: nothing was checked


def write_failure(path: Path, stderr: str, returncode: int | None = None) -> str:
    """Keep a failed child's whole ``stderr`` in ``path``; returns its summary and the file's name. A
    child stopped by a signal (``stopped_by``) is said to be: its output is not why it stopped."""
    try:
        Path(path).write_text(stderr or "(no output)\n")
        kept = Path(path).name
    except OSError as error:  # a full disk: no empty file named as if it held the output
        with suppress(OSError):
            Path(path).unlink(missing_ok=True)
        kept = f"not kept: {Path(path).name} could not be written, {error.strerror or error}"
    if (signum := stopped_by(returncode)) is not None:
        return f"{killed_by(signum)} (its output: {kept})"
    return f"{failure_summary(stderr)} (whole error: {kept})"


def stopped_by(returncode: int | None) -> int | None:
    """The signal that ended a child process: killed by it (``returncode`` -N), or pilot's own one-line
    exit on it (128 + N: ``python -m pilot``, ``pilot.closing``, whose checks only ever return 0, 1 or 2)."""
    if returncode is None or 0 <= returncode <= 128:
        return None
    return -returncode if returncode < 0 else returncode - 128


def killed_by(signum: int) -> str:
    """'it was killed by SIGKILL ...': a child process stopped by a signal before it answered."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    why = (
        "the kernel's out-of-memory killer sends SIGKILL, as does kill -9"
        if name == "SIGKILL"
        else "sent by another process"
    )
    return (
        f"it was killed by {name} before it answered ({why}): nothing was checked, this says nothing about "
        "the run's own state. Run it again"
    )


def first_line(error: BaseException, limit: int = 200) -> str:
    """The error's first line, or its type when the message is empty (EOFError, a bare RuntimeError); one
    longer than ``limit`` ends at its last whole sentence within it (else cut, marked with an ellipsis)."""
    line = _leading_line(error)
    if not line:
        return f"{type(error).__name__} (no message)"
    if len(line) <= limit:
        return line
    end = line.rfind(". ", 0, limit)
    return line[: end + 1] if end >= limit // 3 else line[: limit - 1].rstrip() + "…"


def _leading_line(error: BaseException) -> str:
    """The message's first line; one that only announces what follows ("Error(s) in loading state_dict for
    LlamaForCausalLM:") joined with the next line, which says what went wrong."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        return f"{lines[0]} {lines[1]}"
    return lines[0] if lines else ""


def error_line(error: BaseException, limit: int = 300) -> str:
    """'ModuleNotFoundError: No module named x': the type and the first line of the message."""
    line = _leading_line(error)
    return f"{type(error).__name__}: {line[:limit]}" if line else type(error).__name__


PILOT_DIR = str(Path(__file__).resolve().parent)


def instantiation_failed(error: BaseException) -> bool:
    """Whether ``error`` is Hydra's failed call of a ``_target_`` (the model's or the task's own code raised)."""
    return type(error).__name__ == "InstantiationException" and error.__cause__ is not None


ENCODE_NOTE = "raised by the task's encode on "  # the note TaskData.encoded adds to an error of encode


def encode_note(split: str, position: int, index: object) -> str:
    return f"{ENCODE_NOTE}{split} example {position} of its split (index {index})"


def built_with_error(error: BaseException) -> str:
    """What could not be built (the model, the task), the error its own code raised and where (the innermost
    frame outside Hydra and pilot), in one line: "the model could not be built: TypeError: ... (raised at
    net.py:5 in __init__)"; an error of the task's encode names the example it raised on."""
    encoding = next((e for e in error_chain(error) if _encode_note(e)), None)
    if encoding is not None:
        return in_one_line(encoding)
    text = str(error)
    cause = error.__cause__ if instantiation_failed(error) else error
    what = "the model" if "full_key: model" in text else "the task" if "full_key: data" in text else "the task or model"
    return f"{what} could not be built: {in_one_line(cause)}"


def in_one_line(error: BaseException) -> str:
    """ "TypeError: its first line (raised at net.py:5 in __init__)": an error said in one line, with where the
    code outside Hydra and pilot raised it."""
    first = (str(error).splitlines() or [""])[0][:300]
    said = f"{type(error).__name__}: {first}{raised_at(error)}"
    return (
        f"the task's encode raised on {note.removeprefix(ENCODE_NOTE)}: {said}"
        if (note := _encode_note(error))
        else said
    )


def _encode_note(error: BaseException) -> str | None:
    return next(
        (n for n in getattr(error, "__notes__", None) or [] if isinstance(n, str) and n.startswith(ENCODE_NOTE)), None
    )


def raised_at(error: BaseException) -> str:
    """ " (raised at net.py:5 in __init__)": the innermost frame of ``error`` outside Hydra, pilot and Python's
    import machinery (a syntax error: its file and line); "" when there is none."""
    if isinstance(error, SyntaxError) and error.filename:
        return f" (raised at {Path(error.filename).name}:{error.lineno})"
    frames = traceback.extract_tb(error.__traceback__)
    outside = [
        f for f in frames if "/hydra/" not in f.filename and not f.filename.startswith((PILOT_DIR, "<"))
    ] or frames
    return (
        f" (raised at {Path(outside[-1].filename).name}:{outside[-1].lineno} in {outside[-1].name})" if outside else ""
    )
