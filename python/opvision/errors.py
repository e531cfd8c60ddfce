"""The exceptions opvision raises. Every failure of the C++ library reaches Python as one of
these (never a crash); the message names what is wrong (the input, the node, the pass...).

    Error                 base class of them all (a RuntimeError)
    ├── InvalidArgument   the caller's argument: an input's name, dtype, shape or memory layout,
    │                     an unknown backend, target or pass name (also a ValueError)
    ├── InvalidGraph      the ONNX model cannot be imported or compiled (names the node and op)
    ├── LoadError         a model file cannot be read (missing, not a regular file), or the .opv
    │                     artifact is truncated, corrupted or compiled for another backend
    └── BackendError      the backend cannot run the model (unsupported on it, no device) or
                          failed while running it
"""

__all__ = ["Error", "InvalidArgument", "InvalidGraph", "LoadError", "BackendError"]


class Error(RuntimeError):
    """Base class of every opvision error."""


class InvalidArgument(Error, ValueError):
    """An argument does not fit the model or the library (input name, dtype, shape, contiguity,
    backend, pass name)."""


class InvalidGraph(Error):
    """The ONNX model could not be imported or compiled."""


class LoadError(Error):
    """A model file could not be read, or a .opv artifact could not be loaded."""


class BackendError(Error):
    """The backend refused the model or failed while running it."""
