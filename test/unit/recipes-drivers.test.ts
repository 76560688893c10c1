import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exclusiveDriver, readDriver, sequenceOf, sortBySequence, writeDriver } from '@zkq/core/internal';

const n = (prefix: string, seq: number) => `${prefix}0123456789ab-${String(seq).padStart(10, '0')}`;

test('names sort by sequence number, never by prefix', () => {
  const names = [n('write-', 3), n('read-', 12), n('a-', 1), 'start', n('read-', 2)];
  assert.deepEqual(sortBySequence(names), [n('a-', 1), n('read-', 2), n('write-', 3), n('read-', 12)]);
  assert.deepEqual(sortBySequence(names, 'read-'), [n('read-', 2), n('read-', 12)]);
  assert.deepEqual(sortBySequence(names, undefined, true), [n('read-', 12), n('write-', 3), n('read-', 2), n('a-', 1)]);
  assert.deepEqual(sortBySequence([]), []);
  assert.equal(sequenceOf(n('x-', 42)), 42);
});

test('exclusive driver: the lowest proceeds, the others watch their predecessor', () => {
  const sorted = [n('lock-', 1), n('lock-', 2), n('lock-', 3)];
  assert.deepEqual(exclusiveDriver.decide(sorted, n('lock-', 1)), { proceed: true });
  assert.deepEqual(exclusiveDriver.decide(sorted, n('lock-', 3)), { proceed: false, watch: n('lock-', 2) });
});

test('read/write drivers: readers watch the nearest earlier writer; writers their predecessor', () => {
  const sorted = [n('read-', 1), n('write-', 2), n('read-', 3), n('write-', 4), n('read-', 5)];
  assert.deepEqual(readDriver.decide(sorted, n('read-', 1)), { proceed: true });
  assert.deepEqual(readDriver.decide(sorted, n('read-', 3)), { proceed: false, watch: n('write-', 2) });
  assert.deepEqual(readDriver.decide(sorted, n('read-', 5)), { proceed: false, watch: n('write-', 4) });
  assert.deepEqual(writeDriver.decide(sorted, n('write-', 4)), { proceed: false, watch: n('read-', 3) });
  assert.deepEqual(writeDriver.decide([n('write-', 2)], n('write-', 2)), { proceed: true });
  assert.equal(readDriver.participates('start'), false);
  assert.equal(readDriver.participates(n('lock-', 1)), false);
});
