"""``python -m codemods.verify.child SPEC OUT``: run one side of one file (``side.main``);
``python -m codemods.verify.child --zygote``: the warm process that forks one such run per request (``zygote``)."""

import sys

if __name__ == "__main__":
    if sys.argv[1:] == ["--zygote"]:
        from codemods.verify.child.zygote import serve

        serve()
    else:
        from codemods.verify.child.side import main

        main(sys.argv[1], sys.argv[2])
