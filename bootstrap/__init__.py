"""The composition root: the one place the application is built from its settings.

Every entry point asks it for its parts instead of wiring adapters itself:
the Lambda handlers (in their init phase), ``duetime local`` over SQLite or
the emulator, ``duetime demo``, the deployment simulator and the benchmarks.

- ``bootstrap.settings``: what a deployment decides (``Settings``), read
  from the environment; every builder takes it;
- ``bootstrap.aws``: over DynamoDB, SQS, the secret and sealing stores and
  the AWS targets, from a deployment's ``Settings``;
- ``bootstrap.local``: over one SQLite file (store, queue, secrets), for one
  machine;
- ``bootstrap.parts``: what both build (``ApiServices``, the tick's
  configuration from the settings) and the names of the planner they use;
- ``bootstrap.api``: the API's use cases over the one or the other
  (``build_services``: SQLite given a data directory, else DynamoDB).

Nothing here reads the environment or the clock at import; each builder
imports its adapters when called, so a Lambda function loads only its own.
"""
