/**
 * The fault soak (docs/soak.md): load, faults and a history check against a
 * ZooKeeper of its own. Exits 1 when the checker finds a violation.
 *
 *   npm run soak                               180 s of faults
 *   npm run soak -- --seconds 300 --seed 42    longer, with a given schedule
 *   options: --drain-seconds 60, --rate 25 (jobs/s), --flow-rate 1 (flows/s), --fifo-jobs 300, --keep (logs),
 *            --leader-restarts (kill the housekeeping leader around ZooKeeper restarts, repeatedly)
 */
import { parseArgs } from 'node:util';
import { runSoak } from '../test/soak/run.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '180' },
    'drain-seconds': { type: 'string', default: '60' },
    seed: { type: 'string' },
    rate: { type: 'string', default: '25' },
    'flow-rate': { type: 'string', default: '1' },
    'fifo-jobs': { type: 'string', default: '300' },
    keep: { type: 'boolean', default: false },
    'leader-restarts': { type: 'boolean', default: false },
  },
});

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`--${name} must be a number > 0`);
    process.exit(2);
  }
  return n;
}

// Ctrl-C: exit through process.exit so that every child and the server are killed.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const outcome = await runSoak({
  seconds: positive('seconds', values.seconds),
  drainSeconds: positive('drain-seconds', values['drain-seconds']),
  seed: values.seed !== undefined ? Math.floor(positive('seed', values.seed)) : Math.floor(Math.random() * 2 ** 31),
  jobsPerSecond: positive('rate', values.rate),
  flowsPerSecond: positive('flow-rate', values['flow-rate']),
  fifoJobs: Math.floor(positive('fifo-jobs', values['fifo-jobs'])),
  keepLogs: values.keep,
  leaderRestarts: values['leader-restarts'],
  print: (line) => console.log(line),
});
if (outcome.report.violations.length > 0 || values.keep) console.log(`full report and logs: ${outcome.dir}`);
process.exit(outcome.report.violations.length > 0 ? 1 : 0);
