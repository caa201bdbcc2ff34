"""User mistakes in the tools/extra scripts (a missing file, a bad prototxt, an
unknown output name) end in one line "SCRIPT: error: ..." and exit status 1,
never a Python traceback (DESIGN.md, Errors)."""
import os
import sys


class UserError(Exception):
    """A mistake the user can fix; its text is the whole message."""


def run_main(main):
    """Runs main(), turning a UserError into one message and exit status 1."""
    try:
        main()
    except UserError as error:
        sys.stderr.write("%s: error: %s\n" % (os.path.basename(sys.argv[0]), error))
        sys.exit(1)
