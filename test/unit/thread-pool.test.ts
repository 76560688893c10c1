/**
 * ThreadPool with jobs sharing a thread: an abort ends the wait at once,
 * whether or not the processor honours its signal, and a job aborted before
 * its task reached a thread never starts its processor there.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { ThreadPool } from '../../packages/worker/src/sandbox/pool.ts';
import { poolJob as job } from '../helpers/pool-job.js';
import { waitFor } from '../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../fixtures/processors/threaded.mjs', import.meta.url));

const never = new AbortController().signal;
const ignore = () => undefined;

test('a job aborted before its task reaches a thread never starts its processor', async (t) => {
  const pool = new ThreadPool(PROCESSOR, { concurrency: 2, threads: 1 });
  t.after(() => pool.close());
  assert.equal(pool.jobsPerThread, 2);
  const early = new AbortController();
  const a = pool.run(job('a', { mode: 'started' }), '1', early.signal, ignore);
  // aborted while its thread still starts: the abort message cannot reach it, the flag does
  early.abort('too late');
  await assert.rejects(a, (e) => e === 'too late');
  await pool.run(job('b', { mode: 'started' }), '1', never, ignore);
  const last = (await pool.run(job('c', { mode: 'started' }), '1', never, ignore)) as { started: string[] };
  assert.deepEqual(last.started, ['b', 'c']);
});

test('an abort ends the wait for a shared-thread job at once, though its processor ignores it', async (t) => {
  const pool = new ThreadPool(PROCESSOR, { concurrency: 4, threads: 1 });
  t.after(() => pool.close());
  const abort = new AbortController();
  const hung = pool.run(job('h', { mode: 'ignore' }), '1', abort.signal, ignore);
  // it has started once a job queued after it on the one thread has run
  const after = (await pool.run(job('n', { mode: 'started' }), '1', never, ignore)) as { started: string[] };
  assert.deepEqual(after.started, ['h', 'n']);
  abort.abort(new Error('claim lost'));
  await assert.rejects(hung, /claim lost/);
  // the thread still serves others
  assert.equal(((await pool.run(job('m', { n: 2 }), '1', never, ignore)) as { doubled: number }).doubled, 4);
});

test('an abort without a reason reaches a shared-thread processor as the standard AbortError', async (t) => {
  const pool = new ThreadPool(PROCESSOR, { concurrency: 2, threads: 1 });
  t.after(() => pool.close());
  const report = new BroadcastChannel('thread-pool-abort');
  t.after(() => report.close());
  const seen: { event: string; reason?: string }[] = [];
  report.onmessage = (e) => seen.push((e as { data: { event: string; reason?: string } }).data);
  const abort = new AbortController();
  const held = pool.run(job('r', { mode: 'hold', report: 'thread-pool-abort' }), '1', abort.signal, ignore);
  await waitFor(() => seen.some((s) => s.event === 'started'), { what: 'started' });
  abort.abort();
  await assert.rejects(held, { name: 'AbortError' });
  await waitFor(() => seen.some((s) => s.event === 'aborted'), { what: 'aborted' });
  assert.equal(seen.find((s) => s.event === 'aborted')?.reason, 'This operation was aborted');
});

for (const jobsPerThread of [1, 2]) {
  test(`a result that does not clone fails its own job alone (jobsPerThread ${jobsPerThread})`, async (t) => {
    const pool = new ThreadPool(PROCESSOR, { concurrency: 2, threads: 1, jobsPerThread });
    t.after(() => pool.close());
    const bad = pool.run(job('u', { mode: 'uncloneable' }), '1', never, ignore);
    const good = pool.run(job('g', { n: 2 }), '1', never, ignore);
    await assert.rejects(bad, (e: Error) => e.name === 'DataCloneError' && /could not be cloned/.test(e.message));
    assert.equal(((await good) as { doubled: number }).doubled, 4);
  });

  test(`progress that does not clone rejects the processor's updateProgress (jobsPerThread ${jobsPerThread})`, async (t) => {
    const pool = new ThreadPool(PROCESSOR, { concurrency: 2, threads: 1, jobsPerThread });
    t.after(() => pool.close());
    const r = (await pool.run(job('p', { mode: 'bad-progress' }), '1', never, ignore)) as { progressError: string };
    assert.equal(r.progressError, 'DataCloneError');
  });
}

test('jobs that wait for a place on a thread all run, however many wait, never more than jobsPerThread at once', {
  timeout: 20_000,
}, async (t) => {
  const pool = new ThreadPool(PROCESSOR, { concurrency: 6, threads: 1, jobsPerThread: 2 });
  t.after(() => pool.close());
  // two take the places; when they end, the next two take them while two more still wait
  const runs = Array.from({ length: 6 }, (_, i) =>
    pool.run(job(`c${i}`, { mode: 'count', ms: 20 }), '1', never, ignore),
  );
  const results = (await Promise.all(runs)) as { mostLive: number }[];
  assert.equal(Math.max(...results.map((r) => r.mostLive)), 2);
});

test('a job waiting for a place starts when an aborted run gives its place back, though another still waits', {
  timeout: 20_000,
}, async (t) => {
  const pool = new ThreadPool(PROCESSOR, { concurrency: 2, threads: 1 });
  t.after(() => pool.close());
  const report = new BroadcastChannel('thread-pool-place');
  t.after(() => report.close());
  const seen: { id: string; event: string }[] = [];
  report.onmessage = (e) => seen.push((e as { data: { id: string; event: string } }).data);
  // one place taken for good, the other by a job that ends once aborted
  pool.run(job('forever', { mode: 'ignore' }), '1', never, ignore).catch(ignore);
  const abort = new AbortController();
  const held = pool.run(job('held', { mode: 'hold', report: 'thread-pool-place' }), '1', abort.signal, ignore);
  await waitFor(() => seen.some((s) => s.id === 'held' && s.event === 'started'), { what: 'held started' });
  abort.abort(new Error('cancelled'));
  await assert.rejects(held, /cancelled/);
  // both wait while the aborted run still holds its place; one place frees for the two
  const next = pool.run(job('next', { n: 3 }), '1', never, ignore);
  pool.run(job('last', { n: 4 }), '1', never, ignore).catch(ignore);
  assert.equal(((await next) as { doubled: number }).doubled, 6);
});

test('a job that returned before its thread crashed in the same turn keeps its result', async (t) => {
  const pool = new ThreadPool(PROCESSOR, { concurrency: 2, threads: 1 });
  t.after(() => pool.close());
  const group = { mode: 'barrier', group: 'soon', size: 2 };
  const ended = pool.run(job('ended', group), '1', never, ignore);
  const crashed = pool.run(job('crashes', { ...group, exitSoon: true }), '1', never, ignore);
  await assert.rejects(crashed, /exited with code: 3/);
  assert.equal(((await ended) as { group: string }).group, 'soon');
});

for (const jobsPerThread of [1, 2]) {
  test(`a final progress changed so that it no longer clones fails its own job alone (jobsPerThread ${jobsPerThread})`, async (t) => {
    const pool = new ThreadPool(PROCESSOR, { concurrency: 2, threads: 1, jobsPerThread });
    t.after(() => pool.close());
    const bad = pool.run(job('m', { mode: 'mutated-progress' }), '1', never, ignore);
    const good = pool.run(job('g', { mode: 'count', ms: 50 }), '1', never, ignore);
    await assert.rejects(bad, (e: Error) => e.name === 'DataCloneError' && /could not be cloned/.test(e.message));
    assert.equal(((await good) as { mostLive: number }).mostLive, 1);
  });
}

test('a job waiting for a place is not handed to a thread that is exiting', async (t) => {
  const pool = new ThreadPool(PROCESSOR, { concurrency: 3, threads: 1, jobsPerThread: 2 });
  t.after(() => pool.close());
  const group = { mode: 'barrier', group: 'exiting', size: 2 };
  const ended = pool.run(job('ended', group), '1', never, ignore);
  const crashed = pool.run(job('crashes', { ...group, exitSoon: true }), '1', never, ignore);
  const waiting = pool.run(job('waiting', { n: 5 }), '1', never, ignore);
  await assert.rejects(crashed, /exited with code: 3/);
  assert.equal(((await ended) as { group: string }).group, 'exiting');
  // the place the ended job gave back was on the thread going down: it runs on the next one
  assert.equal(((await waiting) as { doubled: number }).doubled, 10);
});
