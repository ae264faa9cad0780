from gspo_lab.findings.cli import main

raise SystemExit(main())
