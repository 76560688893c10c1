/**
 * The one job-building path of both front-ends (core's buildRecords): ids
 * custom or from the queue's counter in order, the state a job starts in,
 * due times on ZooKeeper's clock counted from when the job was made, and
 * lanes (a priority wins over lifo).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_DELAY_MS } from '@zkq/core';
import { buildRecords, type JobToBuild, LIFO_LANE, laneOf, linkTo, type QueueStore } from '@zkq/core/internal';

/** A store with a counter from 7 and a ZooKeeper clock 1,000 ms ahead of the process's. */
function fakeStore() {
  let next = 7;
  const calls = { nextIds: [] as number[], now: 0 };
  const store = {
    nextIds: async (n: number) => {
      calls.nextIds.push(n);
      return Array.from({ length: n }, () => String(next++));
    },
    clock: {
      now: async () => {
        calls.now++;
        return Date.now() + 1000;
      },
      fromLocal: (t: number) => t + 1000,
    },
  };
  return { store: store as unknown as QueueStore, calls };
}

const job = (over: Partial<JobToBuild> = {}): JobToBuild => ({ name: 'n', data: { a: 1 }, opts: {}, ...over });

test('custom ids are kept (given apart or as opts.jobId); the others come from the counter in order', async () => {
  const { store, calls } = fakeStore();
  const built = await buildRecords(store, [
    job(),
    job({ id: 'given' }),
    job({ opts: { jobId: 'in-opts' } }),
    job({ id: '' }),
  ]);
  assert.deepEqual(
    built.map((e) => [e.record.id, e.custom ?? false]),
    [
      ['7', false],
      ['given', true],
      ['in-opts', true],
      ['8', false],
    ],
  );
  assert.deepEqual(calls.nextIds, [2]);
  assert.equal(calls.now, 0, 'no delayed job: the clock is not measured');
});

test('a delayed job is due on ZooKeeper clock from when it was made; a parked parent has no due time yet', async () => {
  const { store, calls } = fakeStore();
  const made = Date.now() - 5000;
  const [fresh, old, parked, far] = await buildRecords(store, [
    job({ id: 'a', opts: { delay: 100 } }),
    job({ id: 'b', opts: { delay: 100 }, timestamp: made }),
    job({ id: 'c', opts: { delay: 100 }, parked: true, parentLink: linkTo({ queue: 'up', id: 'p' }, {}) }),
    job({ id: 'd', opts: { delay: MAX_DELAY_MS * 2 }, timestamp: made }),
  ]);
  assert.equal(calls.now, 1, 'the clock measured once, first');
  assert.equal(fresh?.record.state, 'delayed');
  assert.ok((fresh?.record.due as number) >= (fresh?.record.timestamp as number) + 1100);
  assert.equal(old?.record.timestamp, made);
  assert.equal(old?.record.due, made + 100 + 1000);
  assert.equal(parked?.record.state, 'waiting-children');
  assert.equal(parked?.record.due, undefined);
  assert.deepEqual(parked?.record.parentLink, { queue: 'up', id: 'p' });
  assert.equal(far?.record.due, made + MAX_DELAY_MS + 1000, 'a delay is cut to 100 years');
});

test('lanes: by priority; lifo only for a job without one', async () => {
  const { store } = fakeStore();
  const lanes = (
    await buildRecords(store, [
      job({ id: 'a' }),
      job({ id: 'b', opts: { priority: 3 } }),
      job({ id: 'c', opts: { lifo: true } }),
      job({ id: 'd', opts: { lifo: true, priority: 2 } }),
    ])
  ).map((e) => e.lane);
  assert.deepEqual(lanes, [laneOf(0, false), laneOf(3, false), LIFO_LANE, laneOf(2, false)]);
});

test('linkTo stores a failure policy by its short names', () => {
  assert.deepEqual(
    linkTo(
      { queue: 'q', id: '1' },
      {
        failParentOnFailure: true,
        continueParentOnFailure: false,
        ignoreDependencyOnFailure: true,
        removeDependencyOnFailure: true,
      },
    ),
    { queue: 'q', id: '1', fpof: true, idof: true, rdof: true },
  );
});
