/**
 * Error codes node-zookeeper-client 1.1.3 does not know (SessionClosedRequireAuth
 * -124, QuotaExceeded -125, Throttled -127, a later server's -999), without a
 * server: the untouched client throws "Unknown code" from its socket's data
 * handler, where no caller can catch it; with wire.ts's extension each reaches
 * the request it answers as an Exception carrying the code, and an answer to
 * the connection itself (an auth packet, a ping, any -124) is reported.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import zookeeper from 'node-zookeeper-client';
import {
  acceptUnknownErrorCodes,
  onConnectionRefused,
  refusalCode,
  sendReadMulti,
  unknownCodeProblems,
} from '../../packages/core/src/zk/wire.ts';
import { fakeWire, framed, nextTick, replyHeader } from '../helpers/wire-bytes.ts';

const LATER_CODES = [-124, -125, -127, -999];

const codeOf = (err: unknown): number | undefined =>
  err && typeof err === 'object' && 'getCode' in err ? (err as zookeeper.Exception).getCode() : undefined;

describe('error codes the wire client does not know', () => {
  test('the guard finds the internals the extension relies on, and names what differs in another copy', () => {
    assert.deepEqual(unknownCodeProblems(), []);
    const other = Object.assign(() => undefined, { create: () => undefined, prototype: {}, OK: 0, AUTH_FAILED: -116 });
    const problems = unknownCodeProblems(other as never, { prototype: { onSocketData() {} } });
    for (const expected of [
      'the client exports another Exception module',
      'Exception.create no longer does `validateCode(code)`',
      'Exception.AUTH_FAILED or OK changed',
      'ConnectionManager.prototype.onSocketData no longer does `Exception.create(responseHeader.err)`',
    ]) {
      assert.ok(problems.includes(expected), `${expected} in:\n${problems.join('\n')}`);
    }
  });

  test('a create, a multi, a read and a read-only multi answered with each code get it as their error', async () => {
    assert.deepEqual(acceptUnknownErrorCodes(), []);
    assert.deepEqual(acceptUnknownErrorCodes(), [], 'twice is once');
    for (const code of LATER_CODES) {
      const wire = fakeWire({ tuned: true });
      const refused: number[] = [];
      onConnectionRefused(wire.client, (c) => refused.push(c));
      const got: [string, unknown][] = [];
      const c = wire.client;
      c.create('/n', (err: unknown) => got.push(['create', err]));
      c.transaction()
        .create('/t')
        .commit((err: unknown) => got.push(['multi', err]));
      c.getData('/a', (err: unknown) => got.push(['getData', err]));
      sendReadMulti(c, [{ op: 'getData', path: '/a' }], (err) => got.push(['readMulti', err]));
      await nextTick();
      assert.doesNotThrow(() =>
        wire.receive(Buffer.concat([7, 8, 9, 10].map((xid) => framed(replyHeader(xid, code))))),
      );
      assert.deepEqual(
        got.map(([name, err]) => [name, codeOf(err), err instanceof zookeeper.Exception]),
        ['create', 'multi', 'getData', 'readMulti'].map((name) => [name, code, true]),
        `code ${code}`,
      );
      assert.deepEqual(refused, code === -124 ? [-124, -124, -124, -124] : [], 'only -124 refuses the connection');
      assert.equal(wire.socket.destroyed, false, 'the replies were read in order');
    }
  });

  test('an auth packet or a ping answered with an error refuses the connection; success does not', () => {
    acceptUnknownErrorCodes();
    const wire = fakeWire({ tuned: true });
    const refused: number[] = [];
    onConnectionRefused(wire.client, (c) => refused.push(c));
    assert.doesNotThrow(() =>
      wire.receive(
        Buffer.concat([
          framed(replyHeader(-4, 0)),
          framed(replyHeader(-2, 0)),
          framed(replyHeader(-4, -999)),
          framed(replyHeader(-2, -127)),
          framed(replyHeader(-4, -115)),
        ]),
      ),
    );
    assert.deepEqual(refused, [-999, -127, -115]);
    assert.equal(refusalCode(framed(replyHeader(12, -101))), undefined, 'a request failing is not the connection');
  });

  test('known codes keep the client its own Exception objects', () => {
    acceptUnknownErrorCodes();
    const create = (zookeeper.Exception as unknown as { create(code: number, path?: string): zookeeper.Exception })
      .create;
    const err = create(-101);
    assert.equal(err.getCode(), -101);
    assert.equal(err.getName(), 'NO_NODE');
    const later = create(-124, '/p');
    assert.equal(later.getName(), 'SESSION_CLOSED_REQUIRE_SASL_AUTH');
    assert.equal(later.getPath(), '/p');
    assert.ok(later instanceof Error);
  });
});
