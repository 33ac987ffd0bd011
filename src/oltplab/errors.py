"""Errors that reach the user as one line, without a traceback."""


class OltplabError(Exception):
    """A problem the user can fix; the message names what is wrong and how to fix it."""


class SpecError(OltplabError):
    """The spec file is malformed or asks for something impossible."""


class EngineError(OltplabError):
    """An engine could not be fetched, initialised, started or checked."""
