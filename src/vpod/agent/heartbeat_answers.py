"""A machine's heartbeat answers, numbered, so a caller holding the last one is told only that.

Under load a process hosting hundreds of machines answers each of them every
second. Most answers are the previous one again, and most of the rest differ
only in their IPUs and events while their 11 links stay the same. Encoding,
sending, parsing and comparing those parts anyway was most of a heartbeat's
cost on both ends. So every answer carries a ``version`` that moves whenever
anything in it changes, and its links a ``links_version``; a caller that says
which of both it holds gets a stub (``unchanged``) when the answer is still
that one, or the answer without its links (``links_omitted``) when only the
links are still those.

Both numbers start at random, so an agent restarted on a machine whose boot
id stayed cannot repeat a version the controller holds another answer under.
"""

from __future__ import annotations

import secrets

from vpod.wire import agent_pb2 as pb

from . import convert
from .model import Fault, LinkHealth, MachineHealth


def _first_version() -> int:
    return secrets.randbits(62) + 1


class HeartbeatAnswers:
    """The answers of one machine: the last one built, in the form each caller needs.

    The messages returned are shared between callers, who copy them (into a fleet's answer,
    or onto the wire) and never change them."""

    def __init__(self) -> None:
        self._made_from: tuple[MachineHealth, tuple[Fault, ...]] | None = None
        self._version = 0
        self._links: tuple[tuple[LinkHealth, ...], list[pb.LinkHealth], int] | None = None
        self._forms: dict[str, pb.HealthReply] = {}

    def answer(
        self,
        health: MachineHealth,
        agent_faults: tuple[Fault, ...],
        *,
        fleet_id: str | None = None,
        known_version: int = 0,
        known_links_version: int = 0,
    ) -> pb.HealthReply:
        """The answer for ``health`` (reused while the backend returns the very same health
        and the agent's own faults are the same), shortened to what the caller lacks.
        ``fleet_id``: the process's, when it hosts several machines (None: the health's)."""
        if fleet_id is None:
            fleet_id = health.fleet_id
        news = health.events is not None and health.events.news
        if not self._same_as_last(health, agent_faults, news):
            self._made_from = (health, agent_faults)
            self._version = self._version + 1 if self._version else _first_version()
            self._forms = {}
        links, links_version = self._encoded_links(health)
        # An answer with events is never a stub: callers hold no such answer (events are
        # read once), and a caller asking again from the same event wants them again.
        if known_version == self._version and not news:
            form = "unchanged"
        elif known_links_version == links_version:
            form = "without links"
        else:
            form = "whole"
        reply = self._forms.get(form)
        if reply is None:
            reply = self._build(form, health, agent_faults, links, links_version, fleet_id)
            self._forms[form] = reply
        return reply

    def _same_as_last(
        self, health: MachineHealth, agent_faults: tuple[Fault, ...], news: bool
    ) -> bool:
        """The very health of the last answer (a backend that reuses its answers), or an
        equal one without events (a backend that builds each anew)."""
        made_from = self._made_from
        if made_from is None or made_from[1] != agent_faults:
            return False
        return made_from[0] is health or (not news and made_from[0] == health)

    def _build(
        self,
        form: str,
        health: MachineHealth,
        agent_faults: tuple[Fault, ...],
        links: list[pb.LinkHealth],
        links_version: int,
        fleet_id: str,
    ) -> pb.HealthReply:
        if form == "unchanged":
            return pb.HealthReply(
                agent_id=health.agent_id,
                boot_id=health.boot_id,
                version=self._version,
                links_version=links_version,
                fleet_id=fleet_id,
                unchanged=True,
            )
        omitted = form == "without links"
        reply = convert.health_to_wire(health, ([] if omitted else links, links_version))
        reply.faults.extend(convert.faults_to_wire(agent_faults))
        reply.fleet_id = fleet_id
        reply.version = self._version
        reply.links_omitted = omitted
        return reply

    def _encoded_links(self, health: MachineHealth) -> tuple[list[pb.LinkHealth], int]:
        """The health's links encoded, and their version: under load a machine's answer
        changes every second (events, holders) while its links almost never do."""
        last = self._links
        if last is not None and (health.links is last[0] or health.links == last[0]):
            return last[1], last[2]
        version = last[2] + 1 if last is not None else _first_version()
        self._links = (health.links, convert.links_to_wire(health.links), version)
        return self._links[1], version
