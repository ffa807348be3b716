"""crawler: a polite, adaptive, distributed web crawler built on Scrapy."""

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType


@contextmanager
def _frames_read_alone() -> Iterator[None]:
    """``inspect.stack()`` as the frames alone, and a frame's module read from its globals, while
    Scrapy's deprecated TLS class aliases are made: ``create_deprecated_class`` takes the module of
    its caller's frame from them. The full reading (every frame's source, and for each frame of
    the import machinery a scan of every loaded module) cost 0.09 to 0.16 s of CPU at every start,
    and the scan of every loaded module's file behind the one look-up 20 to 30 ms
    (docs/design-notes.md)."""
    # For the whole process while it lasts: at a start nothing else runs meanwhile.
    reading, finding = inspect.stack, inspect.getmodule

    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        frames, frame = [], sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            frames.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None))
            frame = frame.f_back
        return frames

    def getmodule(thing: object, _filename: str | None = None) -> ModuleType | None:
        if inspect.isframe(thing):  # the module whose code runs in it, by the name it runs under
            return sys.modules.get(thing.f_globals.get("__name__", ""))
        return finding(thing, _filename)

    inspect.stack, inspect.getmodule = stack, getmodule
    try:
        yield
    finally:
        inspect.stack, inspect.getmodule = reading, finding


# Imported first, so that no import of the project's makes them with the full reading.
with _frames_read_alone():
    import scrapy.core.downloader.contextfactory
    import scrapy.core.downloader.tls  # noqa: F401
