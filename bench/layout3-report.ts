/**
 * What the layout 3 probe (layout3-probe.ts) measures, row by row, and its
 * report: medians over the runs, each row's ratio to today's.
 */
import type { Layout } from './layout3-jobs.js';
import { bodyOf, todayRecord } from './layout3-jobs.js';
import type { RoundStyle } from './layout3-rounds.js';
import { fmt, median, table } from './lib.js';

/** One run's figures, by key (`<case>.jobs`, `raw.creates`...). */
export type Metrics = Record<string, number>;

/** A claim measurement: a row of the table. */
export interface ClaimCase {
  key: string;
  label: string;
  style: RoundStyle;
  /** Claim rounds in flight per session. */
  lanes: number;
  sessions: number;
  /** Finishes beside the claims (the drain), or the claims alone. */
  finish: boolean;
}

const claim = (key: string, label: string, style: RoundStyle, finish: boolean, lanes = 1, sessions = 1): ClaimCase => ({
  key,
  label,
  style,
  lanes,
  sessions,
  finish,
});

export const CLAIMS: ClaimCase[] = [
  claim('today', 'today: read, then claim', 'today', false),
  claim('blind', "today's claim multi alone (no read)", 'today-blind', false),
  claim('set', 'layout 3: claim + setData, read beside', 'set', false),
  claim('create', 'layout 3: claim create only, read beside', 'create', false),
  claim('today.drain', 'today, finishes beside', 'today', true),
  claim('blind.drain', "today's claim multi alone, finishes beside", 'today-blind', true),
  claim('set.drain', 'layout 3 setData, finishes beside', 'set', true),
  claim('create.drain', 'layout 3 create only, finishes beside', 'create', true),
  claim('today.drain.2', 'today, 2 rounds in flight', 'today', true, 2),
  claim('set.drain.2', 'layout 3 setData, 2 rounds in flight', 'set', true, 2),
  claim('set.drain.4', 'layout 3 setData, 4 rounds in flight', 'set', true, 4),
  claim('set.drain.s2', 'layout 3 setData, 2 sessions × 1 round', 'set', true, 1, 2),
  claim('set.drain.s2x2', 'layout 3 setData, 2 sessions × 2 rounds', 'set', true, 2, 2),
];

export const ADDS: { key: string; label: string; layout: Layout; inFlight: number }[] = [
  { key: 'add.today.1', label: 'today: record + pointer, 1 call in flight', layout: 'today', inFlight: 1 },
  { key: 'add.l3.1', label: 'layout 3: one node per job, 1 call in flight', layout: 'l3', inFlight: 1 },
  { key: 'add.today.8', label: 'today: record + pointer, 8 calls in flight', layout: 'today', inFlight: 8 },
  { key: 'add.l3.8', label: 'layout 3: one node per job, 8 calls in flight', layout: 'l3', inFlight: 8 },
];

/** The report of `runs`: every figure's median, and each row's ratio to today's. */
export function render(runs: readonly Metrics[], o: { jobs: number; batch: number; bulk: number }): string {
  const keys = new Set(runs.flatMap((m) => Object.keys(m)));
  const med: Metrics = Object.fromEntries([...keys].map((k) => [k, median(runs.map((m) => m[k] ?? Number.NaN))]));
  // each run's ratio to today's figure of the same run, then their median: the machine's load moves
  // from run to run far more than within the seconds between two rows of one run
  const ratio = (key: string, ref: string) =>
    `${fmt(median(runs.map((m) => (m[key] ?? Number.NaN) / (m[ref] ?? Number.NaN))), 2)}×`;
  const claimRows = CLAIMS.map((c) => [
    c.label,
    fmt(med[`${c.key}.rounds`]),
    fmt(med[`${c.key}.jobs`]),
    fmt(med[`${c.key}.msPerRound`], 2),
    fmt(med[`${c.key}.claimOps`]),
    ratio(`${c.key}.jobs`, c.finish ? 'today.drain.jobs' : 'today.jobs'),
    fmt(med[`${c.key}.serverUs`], 1),
    fmt(med[`${c.key}.clientUs`], 1),
  ]);
  const addRows = ADDS.map((a) => [
    a.label,
    fmt(med[`${a.key}.jobs`]),
    ratio(`${a.key}.jobs`, `add.today.${a.inFlight}.jobs`),
    fmt(med[`${a.key}.serverUs`], 1),
    fmt(med[`${a.key}.clientUs`], 1),
  ]);
  const ms = (k: string) => fmt(med[k], 2);
  const rawRows = [
    ['pipelined single creates (1,000 in flight)', `${fmt(med['raw.creates'])} nodes/s`],
    ['multi of 100 creates, 1 in flight', `${fmt(med['raw.multiCreate1'])} nodes/s`],
    ['multi of 100 creates, 8 in flight', `${fmt(med['raw.multiCreate8'])} nodes/s`],
    ['multi of 100 deletes, 8 in flight', `${fmt(med['raw.multiDelete8'])} nodes/s`],
    ['one create at a time: p50 / p99', `${ms('raw.latencyP50')} / ${ms('raw.latencyP99')} ms`],
  ];
  const now = Date.now();
  const sizes = `record ${todayRecord(0, now).length} B, layout 3 body ${bodyOf(0, now).length} B`;
  const title = runs.length > 1 ? `median of ${runs.length} runs` : 'one run';
  return [
    `Claim rounds: ${fmt(o.jobs)} jobs, ${o.batch} per round, one session unless said (${title}; ${sizes})`,
    table([
      ['', 'rounds/s', 'jobs/s', 'ms/round', 'claim ops', 'vs today', 'server µs/job', 'client µs/job'],
      ...claimRows,
    ]),
    "ms/round: the measure's time × rounds in flight ÷ rounds; claim ops: ops per claim multi; vs today: the",
    "median of each run's ratio to today's row of the same kind (the claim alone, or the drain) in the same run",
    '',
    `Adds: ${fmt(o.jobs)} jobs in addBulk calls of ${fmt(o.bulk)}`,
    table([['', 'jobs/s', 'vs today', 'server µs/job', 'client µs/job'], ...addRows]),
    '',
    'Raw ZooKeeper, same runs (bench/raw.ts)',
    table([['', ''], ...rawRows]),
    '',
    `load average at the start of each run: ${runs.map((m) => fmt(m.load, 1)).join(', ')}`,
  ].join('\n');
}
