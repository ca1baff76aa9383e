"""Where generated artifacts point at each other: alerts to runbooks, runbooks to dashboards.

One module owns every naming scheme so that a link written by one target always resolves
to a file or heading written by another (tests check this over all of ``generated/``).
"""

from __future__ import annotations

import hashlib
import re

from compiler.model import SLO, Channel, Model, Team

RUNBOOKS_DIR = "runbooks"
RULES_DIR = "prometheus/rules"
DATASOURCE_VARIABLE = "datasource"  # every dashboard's data source picker
MAX_UID = 40  # Grafana's limit on dashboard uids


def rules_path(slo: SLO) -> str:
    """Path of a spec's Prometheus rule file inside ``generated/``."""
    return f"{RULES_DIR}/{slo.name}.rules.yaml"


def runbook_path(slo: SLO) -> str:
    """Path of a spec's runbook inside ``generated/``."""
    return f"{RUNBOOKS_DIR}/{slo.name}.md"


def runbook_anchor(alert_name: str) -> str:
    """The GitHub-style anchor of the runbook heading that is exactly the alert name."""
    return alert_name.lower()


def runbook_url(model: Model, slo: SLO, alert_name: str) -> str:
    """``<runbook_base_url>/<spec>.md#<alert name in lower case>``."""
    return f"{model.project.runbook_base_url}/{slo.name}.md#{runbook_anchor(alert_name)}"


def _uid(text: str) -> str:
    if len(text) <= MAX_UID:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return f"{text[: MAX_UID - 9]}-{digest}"


def team_dashboard_uid(team: Team) -> str:
    """Stable uid of a team's dashboard, derived from its name."""
    return _uid(f"slo-team-{team.name}")


OVERVIEW_DASHBOARD_UID = "slo-overview"


def dashboard_url(model: Model, uid: str) -> str:
    return f"{model.project.grafana_base_url}/d/{uid}"


_SHIFTED = re.compile(rf"^{DATASOURCE_VARIABLE}_*$")


def dashboard_variable(label: str) -> str:
    """The Grafana variable (``var-<name>`` in URLs) that filters on slice label ``label``.

    It is the label's own name, except that a slice label ``datasource`` would clash with the
    data source picker: ``datasource`` becomes ``datasource_``, ``datasource_`` becomes
    ``datasource__`` and so on, so no two labels ever share a variable.
    """
    return f"{label}_" if _SHIFTED.fullmatch(label) else label


# Alertmanager receivers: one per team and channel, one per automation webhook. Rules, routes,
# routing tests and the owners check all name receivers through these.
CHANNELS: tuple[Channel, ...] = ("shadow", "page", "ticket", "info")


def team_receiver(team: Team | str, channel: Channel) -> str:
    """``<team>-page``, ``<team>-ticket``, ``<team>-info`` or ``<team>-shadow``."""
    name = team if isinstance(team, str) else team.name
    return f"{name}-{channel}"


def automation_receiver(name: str) -> str:
    return f"automation-{name}"
