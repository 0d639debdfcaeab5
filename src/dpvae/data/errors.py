"""The one exception type of the data layer."""


class DataError(RuntimeError):
    """A raw or prepared file is missing, corrupted, unverifiable or malformed.

    The message always names the offending file (full path or URL) and, for checksum failures, the
    expected and the actual checksum.
    """
