/**
 * Retention turns for tests that drive several stores (workers' sessions)
 * by hand: each turn adds jobs, claims them all with one store and
 * completes them in one batch with a kept count.
 */
import assert from 'node:assert/strict';
import type { Session } from '@zkq/core';
import { claimJobs, finishJobs, lookAtHead, QueueStore } from '@zkq/core/internal';
import type { Queue } from '@zkq/producer';
import type { QueueTestEnv } from './queue.js';
import { prefixSession } from './znodes.js';

/** `n` stores of queue `q`, each on its own session, closed after the test. */
export function storesOf(t: { after(fn: () => unknown): void }, env: QueueTestEnv, n: number): Promise<QueueStore[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const s = new QueueStore((await prefixSession(t, env)) as Session, 'q');
      await s.init();
      return s;
    }),
  );
}

/** Adds `n` jobs, claims and completes them with `store`, keeping `count`; returns the added ids in order. */
export async function completeTurn(queue: Queue, store: QueueStore, n: number, count: number): Promise<string[]> {
  const added = await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'j', data: i })));
  const { candidates } = await lookAtHead(store, { limit: 100, exclude: [] });
  const { claimed } = await claimJobs(store, candidates, { workerId: 'w', lockDuration: 600_000 });
  assert.equal(claimed.length, n);
  claimed.sort((x, y) => Number(x.record.id) - Number(y.record.id));
  const results = await finishJobs(
    store,
    claimed.map((job) => ({
      job,
      outcome: { kind: 'completed' as const, returnvalue: 'ok', remove: false },
      keep: { count },
    })),
  );
  assert.ok(results.every((r) => r.ok));
  return added.map((j) => j.id as string);
}
