"""``fsr replay SOURCE.fsr RUN.yaml``: camera-only render Replay on the embedded host.

Reached through the ``fastsim.hosts`` entry point ``embedded-replay`` (``fastsim_record``
never imports this package).  RUN.yaml names the scene (``backend: mujoco``), the
cameras and a Record instance; the scene is posed from SOURCE's ``render.state`` and
never stepped.  ``--renderer moderngl`` draws SOURCE's recorded geometry instead, with no
physics engine (``fastsim_embedded.backends.gl_replay``; the ``[gl]`` extra).  Exit codes:

    | # | code | when                                                                  |
    |---|------|-----------------------------------------------------------------------|
    | 1 | 0    | the Replay succeeded and the camera-bearing FSR is committed          |
    | 2 | 1    | the Replay failed: nothing under the final name, the reason in one line|
    | 3 | 2    | SOURCE, RUN.yaml or the options are invalid (``path: message`` lines), |
    |   |      | or the output is refused: it exists (without ``--overwrite``), a       |
    |   |      | crashed Run's ``.incomplete`` is there, or another recorder holds it   |
    | 4 | 3    | stopped by SIGTERM/SIGINT/SIGHUP: what was rendered is committed with  |
    |   |      | ``completion: stopped`` (signals as ``fsr record``: ``stop_signals``)  |
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import attrs

from fastsim_contract.run_errors import RunConfigError
from fastsim_embedded.cli.signals import StopSignals
from fastsim_embedded.output.names import protect_inputs
from fastsim_embedded.output.transaction import OutputRefused
from fastsim_embedded.render.replay import RENDERERS, replay

__all__ = ["COMMAND", "ReplayCommand"]


def _err(text: str) -> None:
    print(text.splitlines()[0] if text else text, file=sys.stderr)


@attrs.frozen
class ReplayCommand:
    """The ``replay`` subcommand as the ``fsr`` dispatcher expects it."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare ``SOURCE.fsr RUN.yaml [--output-dir DIR] [--backend NAME] [--renderer NAME]``."""
        parser.add_argument("source", metavar="SOURCE.fsr", help="an FSR with a render.state stream")
        parser.add_argument("run", metavar="RUN.yaml", help="the Replay Run (scene, cameras, Record)")
        parser.add_argument("--output-dir", default=".", metavar="DIR", help="where the new FSR is committed")
        parser.add_argument("--backend", default=None, metavar="NAME", help="override the Run's backend")
        parser.add_argument("--renderer", default="mujoco", metavar="|".join(RENDERERS),
                            help="mujoco: pose the Run's scene; moderngl: draw the recorded geometry, no physics")
        parser.add_argument("--overwrite", action="store_true",
                            help="replace an existing output file (default: refuse, exit 2)")

    def run(self, args: argparse.Namespace) -> int:
        """Replay; never raise."""
        protect_inputs([args.source, args.run])  # never replaced, even with --overwrite
        stop = StopSignals(command="fsr replay", watchdog=bool(getattr(args, "owns_process", False))).install()
        try:
            result, backend = replay(
                args.source, args.run, Path(args.output_dir), backend=args.backend, overwrite=args.overwrite,
                on_host=stop.attach, on_cut=stop.arm, renderer=args.renderer,
            )
        except OutputRefused as exc:
            _err(f"fsr replay: {exc}")
            return 2
        except RunConfigError as exc:
            for issue in exc.issues:
                _err(str(issue))
            return 2
        except Exception as exc:  # a host bug: one line, never a traceback
            _err(f"fsr replay: {type(exc).__name__}: {exc}")
            return 1
        finally:
            if not getattr(args, "owns_process", False):
                stop.close()
        outcome = result.outcome
        if outcome.status in ("stopped", "cancelled") and outcome.committed:
            for path in outcome.committed:
                print(f"committed {path} (completion {outcome.status}: {outcome.reason})")
            return 3
        if outcome.ok and outcome.committed:
            for path in outcome.committed:
                print(f"committed {path}")
            print(f"replayed {len(backend.applied)} render.state samples, mode render, renderer {args.renderer}")
            return 0
        _err(f"fsr replay: replay {outcome.status}: {outcome.reason or 'nothing was committed'}")
        return 1


COMMAND = ReplayCommand()


def main(argv: list[str] | None = None) -> int:
    """Run the command standalone (``python -m fastsim_embedded.cli.replay``)."""
    parser = argparse.ArgumentParser(prog="fsr replay")
    COMMAND.add_arguments(parser)
    return COMMAND.run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
