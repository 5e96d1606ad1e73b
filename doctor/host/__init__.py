"""The one boundary for side effects: every fact rocmdoctor learns about a machine comes
through a `Host` (live: `host.live`; replayed: `host.snapshot`). Commands and child processes
run through `host.process`, which kills a whole process group on timeout."""

from rocmdoctor.host.base import (
    DEFAULT_COMMAND_TIMEOUT_S,
    NOT_INSTALLED,
    CommandResult,
    Host,
    PathInfo,
    PlatformInfo,
    StatfsInfo,
    UserInfo,
    command_key,
    natural_key,
    natural_sorted,
)

__all__ = ["DEFAULT_COMMAND_TIMEOUT_S", "NOT_INSTALLED", "CommandResult", "Host", "PathInfo",
           "PlatformInfo", "StatfsInfo", "UserInfo", "command_key",
           "natural_key", "natural_sorted"]
