"""``fsr check RUN.yaml``: compile a Run and print the effective Record config as YAML.

    | # | outcome                                  | stdout                 | stderr             | exit |
    |---|------------------------------------------|------------------------|--------------------|------|
    | 1 | valid, one or more Record plugin entries | effective config YAML  | -                  | 0    |
    | 2 | unreadable file, YAML syntax error,      | -                      | ``path: message``  | 2    |
    |   | nesting too deep                         |                        |                    |      |
    | 3 | any Run or component issue (together)    | -                      | every issue, 1/line| 2    |
    | 4 | valid Run without a Record plugin entry  | -                      | one line           | 2    |
    | 5 | the host (``fastsim.hosts``) cannot      | effective config YAML  | every issue, 1/line| 2    |
    |   | resolve the backend, the scene or a      |                        | (did-you-mean)     |      |
    |   | selected channel                         |                        |                    |      |
    | 6 | a config the prepare step will refuse    | effective config YAML  | one line per entry | 2    |
    |   | whatever the lock (a Run locked before   |                        | (field and rule)   |      |
    |   | 0.3.8 that disables a global source,     |                        |                    |      |
    |   | incomplete preservation, or adds a       |                        |                    |      |
    |   | postprocessor: config rules 4-6)         |                        |                    |      |

Row 5: when a host is installed, it resolves the backend and its declared channels
without stepping the simulation (``resolve``), so a misspelled backend, scene key or
channel fails here and not only at record time.  Without a host the plugin's own
checks are all there is.

Each Record entry is printed as one YAML document headed by a comment naming its
path and the catalog version it compiled against, in that version's schema (so it can
be authored back under the same lock).  Never a traceback.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from fastsim_contract.run_compiler import ComponentCatalog, discover_catalogs, load_and_compile
from fastsim_contract.run_errors import RunConfigError
from fastsim_record import COMPONENT_ID
from fastsim_record.cli._host import load_host
from fastsim_record.config.catalog import CATALOG
from fastsim_record.config.model import RecordConfig
from fastsim_record.config.rules import prepare_refusal

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr check``'s arguments."""
    parser.add_argument("run_file", metavar="RUN.yaml", help="a FastSim v2 Run document")


def _catalogs() -> dict[str, ComponentCatalog]:
    try:
        found = discover_catalogs()
    except Exception:  # a broken third-party entry point must not hide our own result
        found = {}
    found[COMPONENT_ID] = CATALOG
    return found


def run(args: argparse.Namespace) -> int:
    """Compile, print the effective Record config(s); 0 when valid, 2 otherwise."""
    try:
        compiled = load_and_compile(args.run_file, _catalogs())
    except RunConfigError as exc:
        for issue in exc.issues:
            print(issue, file=sys.stderr)
        return 2
    except RecursionError:  # a document nested deeper than the checks can walk
        print(f"{args.run_file}: the Run is nested too deeply to check", file=sys.stderr)
        return 2
    records = compiled.components_using(COMPONENT_ID)
    if not records:
        print(f"plugins: no plugin entry uses {COMPONENT_ID}", file=sys.stderr)
        return 2
    documents = []
    for component in records:
        header = f"# plugins.{component.alias}.config ({COMPONENT_ID} {component.version})\n"
        body = yaml.safe_dump(component.effective_config(), sort_keys=False, default_flow_style=False)
        documents.append(header + body)
    sys.stdout.write("---\n".join(documents))
    sys.stdout.flush()
    failed = False
    for component in records:  # row 6: what the prepare step refuses whatever the lock
        config = component.config
        refusal = prepare_refusal(config, f"plugins.{component.alias}.config") if isinstance(
            config, RecordConfig) else None
        if refusal is not None:
            print(refusal, file=sys.stderr)
            failed = True
    host, _ = load_host()
    resolve = getattr(host, "resolve", None)
    if callable(resolve):
        issues, _channels = resolve(args.run_file)
        for line in issues:
            print(line, file=sys.stderr)
        failed = failed or bool(issues)
    return 2 if failed else 0
