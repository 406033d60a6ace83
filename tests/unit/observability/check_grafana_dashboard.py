#!/usr/bin/env python3
"""Checks packaging/grafana/warren.json: valid JSON, the data source as the ${DS_PROMETHEUS}
variable on every panel, the `worker` variable, and, when promtool is given, that every panel's
PromQL parses (each expression becomes a recording rule for `promtool check rules`).

Usage: check_grafana_dashboard.py DASHBOARD_JSON [PROMTOOL]"""
import json
import os
import re
import subprocess
import sys
import tempfile

DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}


def fail(message):
    print(f"check_grafana_dashboard: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) not in (2, 3):
        fail(__doc__)
    path = sys.argv[1]
    promtool = sys.argv[2] if len(sys.argv) == 3 else None
    try:
        with open(path, encoding="utf-8") as file:
            dashboard = json.load(file)
    except (OSError, ValueError) as error:
        fail(f"{path}: {error}")

    if not 36 <= dashboard.get("schemaVersion", 0) <= 39:
        fail(f"{path}: schemaVersion {dashboard.get('schemaVersion')} (expected about 38)")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    if variables.get("DS_PROMETHEUS", {}).get("type") != "datasource":
        fail(f"{path}: no datasource variable DS_PROMETHEUS")
    worker = variables.get("worker", {})
    if worker.get("definition") != "label_values(warren_messages_received_total, worker)":
        fail(f"{path}: the worker variable must come from "
             "label_values(warren_messages_received_total, worker)")

    expressions = []
    ids = set()
    for panel in dashboard["panels"]:
        if panel["id"] in ids:
            fail(f"{path}: panel id {panel['id']} used twice")
        ids.add(panel["id"])
        if panel["type"] == "row":
            continue
        if panel.get("datasource") != DATASOURCE:
            fail(f"{path}: panel '{panel['title']}' does not use ${{DS_PROMETHEUS}}")
        for target in panel["targets"]:
            if target.get("datasource") != DATASOURCE:
                fail(f"{path}: a query of '{panel['title']}' does not use ${{DS_PROMETHEUS}}")
            expressions.append((panel["title"], target["expr"]))
    if not expressions:
        fail(f"{path}: no queries")

    if promtool:
        # Grafana's variables, as Grafana would substitute them.
        substitutions = {"$__rate_interval": "1m", "$worker": ".*", "$instance": ".*"}
        rules = []
        for index, (title, expr) in enumerate(expressions):
            for name, value in substitutions.items():
                expr = expr.replace(name, value)
            if "$" in re.sub(r"\{\{[^}]*\}\}", "", expr):
                fail(f"{path}: '{title}' uses an unknown variable: {expr}")
            rules.append({"record": f"dashboard:query_{index}", "expr": expr})
        with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as file:
            json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, file)  # JSON is YAML
            rules_path = file.name
        try:
            result = subprocess.run([promtool, "check", "rules", rules_path],
                                    capture_output=True, text=True)
        finally:
            os.unlink(rules_path)
        if result.returncode != 0:
            fail(f"{path}: a query does not parse:\n{result.stdout}{result.stderr}")
    print(f"{path}: OK, {len(expressions)} queries")


if __name__ == "__main__":
    main()
