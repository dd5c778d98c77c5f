"""The price table and the assumptions the cost model prices runs with.

us-east-1 list prices, on demand, without free tiers, as read on ``PRICES_READ_ON``;
what a request, an invocation and a batch take (``AWS_CALL_MS``, ``TARGET_MS``, ...);
the sizes and limits the worker's sizing and the idle budgets are judged against.
"""

from __future__ import annotations

from typing import Final

# --- prices ----------------------------------------------------------------------------------
# us-east-1 list prices, on demand, without free tiers. Read from the AWS pricing
# pages on PRICES_READ_ON. Prices change: check before relying on them.
PRICES_READ_ON: Final = "2026-11-29"
DYNAMODB_PER_MILLION_WRU: Final = 0.625  # on-demand write request units
DYNAMODB_PER_MILLION_RRU: Final = 0.125  # on-demand read request units
SQS_PER_MILLION_REQUESTS: Final = 0.40  # standard queue, each 64 KB chunk of a request
LAMBDA_PER_MILLION_REQUESTS: Final = 0.20
LAMBDA_ARM64_PER_GB_SECOND: Final = 0.0000133334
SCHEDULER_PER_MILLION_INVOCATIONS: Final = 1.00  # EventBridge Scheduler
LOGS_INGESTION_PER_GB: Final = 0.50  # CloudWatch Logs, standard class
ALARM_PER_MONTH: Final = 0.10  # standard-resolution metric alarm
DASHBOARD_PER_MONTH: Final = 3.00  # beyond the 3 free dashboards per account
CUSTOM_METRIC_PER_MONTH: Final = 0.30  # first 10,000 metrics
SECRETS_MANAGER_PER_10K_CALLS: Final = 0.05
# SSM Parameter Store: standard parameters have no fee and their API calls at
# standard throughput none; SSM decrypts (and encrypts) a SecureString with a
# KMS request, $0.03 per 10,000 past the 20,000 free a month (aws/ssm, an AWS
# managed key, has no monthly fee). Higher throughput, once turned on for the
# account and region, is $0.05 per 10,000 interactions.
KMS_PER_10K_REQUESTS: Final = 0.03
KMS_KEY_PER_MONTH: Final = 1.00  # a customer managed key (the AWS managed ones: no fee)
SSM_HIGHER_THROUGHPUT_PER_10K: Final = 0.05
SSM_ADVANCED_PARAMETER_PER_MONTH: Final = 0.05

# --- assumptions ---------------------------------------------------------------------------
MONTH_S: Final = 30 * 24 * 3600
AWS_CALL_MS: Final = 8.0  # one in-region DynamoDB/SQS round trip from Lambda
TARGET_MS: Final = 200.0  # one webhook call (the worker waits for the answer)
TICK_PASS_MS: Final = 50.0  # an idle pass's own Python, besides its AWS requests
LAMBDA_PLATFORM_LOG_BYTES: Final = 350  # START, END and REPORT lines per invocation
ESM_IDLE_POLLERS: Final = 5  # Lambda's SQS event source mapping: concurrent long polls
ESM_LONG_POLL_S: Final = 20
ALARMS_IN_STACK: Final = 10  # the synthesized stack (cdk.out) has 10 CloudWatch alarms
# Lambda gives a function one vCPU at 1,769 MB and CPU in proportion below it.
LAMBDA_MB_PER_VCPU: Final = 1769
MIN_LAMBDA_MB: Final = 128
MEMORY_SIZES_MB: Final = (128, 256, 384, 512, 768, 1024)
# A size fits when the worker's measured peak resident memory is at most this
# share of it (the rest: the runtime's own process, larger payloads, growth).
MEMORY_HEADROOM: Final = 0.8
# A size is not CPU-bound when a warm full batch's CPU time at its vCPU share
# takes at most this share of the longest record's wait: the rest is margin
# for run-to-run noise (about 6% here) and for Lambda's arm64 CPU, not measured.
CPU_MARGIN: Final = 0.8
MAX_BATCH: Final = 10  # SQS gives at most 10 messages a receive
FLOOR_WRU: Final = 3  # admitted, started, finished: one write each
# Webhook signing secrets with duetime:secretStore secretsmanager: a secret per webhook schedule.
SECRETS_MANAGER_SECRET_PER_MONTH: Final = 0.40
# The stack's webhook signing key (infra/secrets.py): one Secrets Manager secret, from
# which each schedule's secret is derived, whatever the number of schedules.
SIGNING_KEY_SECRETS: Final = 1
# The idle budgets: compute, DynamoDB and SQS at most $1.00 a month; with the secrets'
# key (or store) at most $1.50.
IDLE_CORE_LIMIT: Final = 1.00
IDLE_WITH_KEY_LIMIT: Final = 1.50
SECRET_CADENCES: Final = {
    "every minute": 60,
    "every 5 minutes": 300,
    "hourly": 3600,
    "daily": 86400,
}
PROBE_SCHEDULES: Final = 40  # webhook schedules the worker probe runs
PROBE_PHASES: Final = 3  # slots of each: the first on a cold worker, the others warm
