"""Against a live Prometheus: preflight (will each spec see its data here?) and backtest (how often
would its alerts have fired over the history this server holds?).

A view over the model and the plan, like ``explain``: it never reads a target's rendered text
except the rule files backtest must evaluate, which the command line passes in. Read-only: every
request is a query (``/api/v1/query``, ``query_range``, ``series``, ``label/<name>/values``,
``status/buildinfo``); nothing is ever written to the server.
"""

CONCURRENCY = 2  # range queries backtest asks of the server at once (the command line's default)
