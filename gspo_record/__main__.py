from gspo_record.cli import main

raise SystemExit(main())
