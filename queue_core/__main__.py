from .cli.admin import main
from .cli.args import exit_with

exit_with(main)
