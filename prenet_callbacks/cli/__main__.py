import sys

from prenet_callbacks.cli import main

sys.exit(main())
