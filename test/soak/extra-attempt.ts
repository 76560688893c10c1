/**
 * One attempt of a job of the soak's extras queue (extras.ts), by what its
 * data says: log hundreds of ~1 KB lines then complete or throw, throw an
 * oversized error, return a value too large to store, or just return. Like
 * attempt.ts it appends the start and the end to the worker's log before the
 * processor returns; first it reads the ctime of the claim node it runs under
 * (ZooKeeper's time of the claim), for the rate limit's check.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job, Session } from '@zkq/core';
import { QueueStore } from '@zkq/core/internal';
import { dataHash, type ExtraData, type SoakResult } from './history.js';

/** The extras queue and its rate limit (every worker on it has this limiter). */
export const EXTRA_QUEUE = 'extra';
export const EXTRA_LIMIT = { max: 6, duration: 1000 };
/** Bytes of each line a `logs` job logs (well under the line limit: no line is cut). */
export const LOG_LINE_BYTES = 1000;
/** Bytes of the message a `big-error` job throws, and of the value a `too-large` job returns. */
export const BIG_ERROR_BYTES = 300_000;
export const TOO_LARGE_BYTES = 600_000;

/** Line `i` of attempt `t`: `<t>:<i>:` padded to LOG_LINE_BYTES. */
export function logLine(t: string, i: number): string {
  const head = `${t}:${i}:`;
  return head + '.'.repeat(LOG_LINE_BYTES - head.length);
}

/** The start of a `big-error` job's reason (the rest is cut). */
export function bigErrorHead(id: string): string {
  return `big failure of ${id} in attempt `;
}

export async function runExtraAttempt(
  name: string,
  write: (event: object) => void,
  session: () => Promise<Session>,
  q: string,
  job: Job,
): Promise<SoakResult> {
  const t = String(job.token);
  write({ k: 'start', q, j: job.id, t, n: job.attemptsStarted });
  const stat = await (await session())
    .exists(new QueueStore(await session(), q).layout.claim(job.id))
    .catch(() => null);
  if (stat) write({ k: 'claim', q, j: job.id, t, ctime: stat.ctime });
  const d = job.data as ExtraData;
  const v: SoakResult = { w: name, t, n: job.attemptsStarted, h: dataHash(job.data) };
  const fail = (err: string): never => {
    write({ k: 'end', q, j: job.id, t, ok: false, err: err.slice(0, 200) });
    throw new Error(err);
  };
  if (d.x === 'logs') {
    for (let i = 0; i < (d.lines ?? 0); i++) await job.log(logLine(t, i));
    if (!d.ok) fail(`planned failure of ${job.id} in attempt ${t}`);
  } else if (d.x === 'big-error') {
    fail(`${bigErrorHead(job.id)}${t}: ${'y'.repeat(BIG_ERROR_BYTES)}`);
  } else {
    await sleep(Math.random() * 200);
  }
  write({ k: 'end', q, j: job.id, t, ok: true, v });
  return d.x === 'too-large' ? ({ ...v, pad: 'z'.repeat(TOO_LARGE_BYTES) } as SoakResult) : v;
}
