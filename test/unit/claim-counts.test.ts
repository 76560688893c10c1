/**
 * A claim writes no record: what it used to count there (an attempt
 * started, a stall when the attempt before it died) is told by the ready
 * pointer's version, against the claims of that pointer the record has
 * counted (`counted`). These are the pure rules; the integration tests
 * (queue/leases, queue/worker) run them on a server.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attemptKey, attemptRecord, claimedView, diedBefore, type JobRecord, newRecord } from '@zkq/core/internal';

const P = '/q/ready/p-0000000000/b-0000000000/qn-j-0000000004';
const OTHER = '/q/ready/p-0000000000/b-0000000001/qn-j-0000000000';

function record(over: Partial<JobRecord> = {}): JobRecord {
  return { ...newRecord('j', 'n', {}, {}, 'waiting', 1), ...over };
}

test("a pointer's first claim follows no dead attempt; later ones count those the record has not", () => {
  assert.equal(diedBefore(record(), P, 1), 0);
  // two claims of this pointer ended with no finish and no revocation: their workers died
  assert.equal(diedBefore(record(), P, 3), 2);
  // the record counted the pointer's claims up to version 2 (a finish given back in place, a revocation)
  assert.equal(diedBefore(record({ counted: { pointer: P, token: 2 } }), P, 3), 0);
  assert.equal(diedBefore(record({ counted: { pointer: P, token: 2 } }), P, 5), 2);
  // what the record counted of another pointer says nothing of this one (a job moved: a new pointer)
  assert.equal(diedBefore(record({ counted: { pointer: OTHER, token: 7 } }), P, 1), 0);
});

test("an attempt's record: active, started, its stalls counted, the pointer's claims counted up to its token", () => {
  const r = record({ attemptsStarted: 2, stalledCounter: 1, counted: { pointer: P, token: 1 } });
  const a = attemptRecord(r, { pointer: P, token: 4, at: 1234, worker: 'w' });
  assert.equal(a.state, 'active');
  assert.equal(a.stalledCounter, 1 + 2, 'versions 2 and 3: two attempts died');
  assert.equal(a.attemptsStarted, 2 + 2 + 1, 'the dead ones and this one');
  assert.equal(a.processedOn, 1234);
  assert.equal(a.processedBy, 'w');
  assert.deepEqual(a.counted, { pointer: P, token: 4 });
  assert.equal(r.state, 'waiting', 'the stored record is not changed');
});

test('a waiting record read with its claim: active since the claim, its attempt counted', () => {
  const claim = Buffer.from(JSON.stringify({ worker: 'w1', pointer: P, lockDuration: 30000, at: 99 }));
  const v = claimedView(record({ attemptsStarted: 1, processedOn: 5 }), claim);
  assert.equal(v.state, 'active');
  assert.equal(v.attemptsStarted, 2);
  assert.equal(v.processedOn, 99);
  assert.equal(v.processedBy, 'w1');
  // a claim node zkq did not write still says the job runs
  assert.equal(claimedView(record(), Buffer.from('not json')).state, 'active');
});

test("a Job's token names one attempt: the same fencing token on another pointer is another key", () => {
  const ready = '/zkq/q/ready';
  const at = (pointerCzxid: number, token: number, pointer = `${ready}/p-0000000000/b-0000000000/qn-j-0000000035`) =>
    attemptKey({ token, pointerCzxid, pointer });
  assert.equal(at(35, 1), 'z.p0.b0.z.1');
  assert.notEqual(at(35, 1), at(36, 1));
  assert.notEqual(at(35, 1), at(35, 2));
  // pointers created in one transaction share a czxid: their places tell them apart
  assert.notEqual(at(35, 1), at(35, 1, `${ready}/p-0000000000/b-0000000000/qn-k-0000000036`));
  assert.notEqual(at(35, 1), at(35, 1, `${ready}/p-0000000001/b-0000000000/qn-k-0000000035`));
  assert.notEqual(at(35, 1), at(35, 1, `${ready}/p-0000000000/b-0000000001/qn-k-0000000035`));
  assert.equal(at(35, 1, `${ready}/l/b-0000000002/qn-a-b-0000000100`), 'z.l.b2.2s.1', 'an id with dashes');
});
