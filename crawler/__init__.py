"""crawler: a polite, adaptive, distributed web crawler built on Scrapy."""

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def _frames_without_source() -> Iterator[None]:
    """``inspect.stack()`` as the frames alone, while Scrapy's deprecated TLS class aliases are
    made: ``create_deprecated_class`` takes the module of its caller's frame from it, and the
    full reading (every frame's source, and for each frame of the import machinery a scan of
    every loaded module) cost 0.09 to 0.16 s of CPU at every start (docs/design-notes.md)."""
    reading = inspect.stack

    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        frames, frame = [], sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            frames.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None))
            frame = frame.f_back
        return frames

    inspect.stack = stack
    try:
        yield
    finally:
        inspect.stack = reading


# Imported first, so that no import of the project's makes them with the full reading.
with _frames_without_source():
    import scrapy.core.downloader.contextfactory
    import scrapy.core.downloader.tls  # noqa: F401
