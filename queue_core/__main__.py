import sys

from .cli.admin import main

sys.exit(main())
