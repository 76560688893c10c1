/**
 * Pins the cancel request's ops (requestCancel reads a failure of the last
 * one as "asked before"), its node names (a job id may hold '-', a token
 * not) and the reason's validation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@zkq/core';
import {
  cancelRequestOps,
  MAX_CANCEL_REASON_BYTES,
  parseCancelName,
  QueueLayout,
  validateCancelReason,
} from '@zkq/core/internal';

const layout = new QueueLayout('q');

test("a request checks the attempt's pointer at the token and the claim, then creates its node in the worker directory", () => {
  const data = Buffer.from('{}');
  const pointer = '/q/ready/p-0000000000/b-0000000000/qn-a-1-0000000003';
  const ops = cancelRequestOps(layout, { id: 'a-1', worker: 'host/1 x', pointer, token: 7, data });
  assert.deepEqual(ops, [
    { op: 'check', path: pointer, version: 7 },
    { op: 'check', path: layout.claim('a-1'), version: -1 },
    { op: 'create', path: '/q/cancels/w-host%2F1%20x/a-1-7', data, role: 'into' },
  ]);
  assert.equal(layout.cancelsOf('host/1 x'), '/q/cancels/w-host%2F1%20x');
});

test('a request name gives back its job id and token; other names are not requests', () => {
  assert.deepEqual(parseCancelName('a-1-7'), { id: 'a-1', token: 7 });
  assert.deepEqual(parseCancelName('42-12'), { id: '42', token: 12 });
  assert.deepEqual(parseCancelName('x:y@z-0'), { id: 'x:y@z', token: 0 });
  assert.equal(parseCancelName('42'), undefined);
  assert.equal(parseCancelName('-3'), undefined);
  assert.equal(parseCancelName('a-b'), undefined);
});

test('a reason is a string of bounded size, or nothing', () => {
  validateCancelReason(undefined);
  validateCancelReason('');
  validateCancelReason('é'.repeat(MAX_CANCEL_REASON_BYTES / 2));
  assert.throws(() => validateCancelReason('é'.repeat(MAX_CANCEL_REASON_BYTES / 2 + 1)), InvalidArgumentError);
  assert.throws(() => validateCancelReason(42), InvalidArgumentError);
  assert.throws(() => validateCancelReason(new Error('x')), InvalidArgumentError);
});
