"""The library's own code, printed in the lessons, so that a lesson and the library never drift.

    print(excerpt(norms.RMSNorm.forward))                                   # a whole function
    print(excerpt(Attention.forward, "if self.rotates", "k = apply_rotary"))  # some of its lines

Each excerpt starts with a header naming the file (relative to the installed library) and the
function, so a student can open the file and read on. The header gives no line numbers: a lesson's
stored output then changes only when the code it prints changes, not when an unrelated line above
it moves.
"""

from __future__ import annotations

import inspect
from pathlib import Path

_LIBRARY = Path(__file__).resolve().parent


def excerpt(obj, first: str | None = None, last: str | None = None) -> str:
    """The source of a function, method or class, under a header naming its file and itself.

    first, last: keep only the lines from the first one containing `first` to the first line
    after it containing `last` (both included); either may be omitted.
    """
    try:
        obj = inspect.unwrap(obj)  # the function itself, not a decorator's wrapper
        lines, _ = inspect.getsourcelines(obj)
        path = Path(inspect.getsourcefile(obj)).resolve()
    except (TypeError, OSError) as error:
        raise ValueError(
            f"obj must be a function, method or class of lmcourse, got {obj!r}: {error}"
        ) from None
    if _LIBRARY not in path.parents:
        raise ValueError(f"obj must be defined in lmcourse ({_LIBRARY}), not in {path}")
    begin, end = 0, len(lines)
    if first is not None:
        begin = _find(lines, first, 0, obj)
    if last is not None:
        end = _find(lines, last, begin, obj) + 1
    kept = lines[begin:end]
    indent = min(len(line) - len(line.lstrip()) for line in kept if line.strip())
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", "?"))
    where = path.relative_to(_LIBRARY.parent).as_posix()
    whole = begin == 0 and end == len(lines)
    header = f"# {where}: {name}" if whole else f"# {where}: part of {name}"
    return header + "\n" + "".join(line[indent:] if line.strip() else "\n" for line in kept)


def _find(lines: list[str], text: str, begin: int, obj) -> int:
    for i in range(begin, len(lines)):
        if text in lines[i]:
            return i
    raise ValueError(f"no line containing {text!r} in the source of {obj.__qualname__}")
