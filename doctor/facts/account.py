"""Who rocmdoctor runs as: the account (its name, uid and the groups this session has) and
/etc/group, the groups it was given (a session's groups are fixed at login).

By hand: `id`; `getent group render video`.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.host import Host, UserInfo

GROUP_FILE = "/etc/group"


def account(host: Host) -> UserInfo:
    """The account: name, uid and this session's groups."""
    return host.user


def group_file(host: Host) -> Optional[str]:
    """/etc/group's text (None: unreadable), read once."""
    return host.memo("facts:etc-group", lambda: host.read_file(GROUP_FILE))
