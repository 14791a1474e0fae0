"""Run the snippets of one page (``python run_page.py PAGE``) in the current directory.

Exit status 0 when every snippet ran; otherwise the failing snippet's page line and the
traceback. Run by ``test_snippets.py`` in a fresh process and an empty directory per page.
A snippet that raises ``SystemExit`` (``sys.exit()``, ``exit(0)``, argparse) fails its page too:
otherwise the page would end there, its later snippets unrun, with a status that may read as
success. Only ``KeyboardInterrupt`` is let through.
"""
from __future__ import annotations

import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from snippets import page_snippets  # noqa: E402


def main(page: str) -> int:
    namespace: dict = {"__name__": "__docs_snippet__"}
    for snippet in page_snippets(Path(page)):
        try:
            exec(compile(snippet.code, f"{page}:{snippet.line}", "exec"), namespace)
        except KeyboardInterrupt:
            raise
        except BaseException:    # SystemExit too: a snippet must not end its page early
            kind = "snippet" if snippet.shown else "snippet-setup"
            print(f"{page}:{snippet.line}: the {kind} starting here failed:", file=sys.stderr)
            traceback.print_exc()
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
