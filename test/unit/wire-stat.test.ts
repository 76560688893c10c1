/**
 * A stat in a multi's reply read without BigInts: every 64-bit field is the
 * Number the BigInt conversion gives (past 2^53 and negative too), and the
 * ephemeral owner the same hex text.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseWriteReply, readLong } from '../../packages/core/src/zk/wire/replies.ts';

const EDGES = [
  0n,
  1n,
  -1n,
  2n ** 31n - 1n,
  2n ** 31n,
  2n ** 32n - 1n,
  2n ** 32n,
  2n ** 32n + 1n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  2n ** 53n + 3n,
  2n ** 62n + 2n ** 10n + 1n,
  2n ** 63n - 1n,
  -(2n ** 63n),
  -(2n ** 53n) - 1n,
  -(2n ** 32n) + 1n,
  0x1234_5678_9abc_def0n,
];

test('a 64-bit field is the Number a BigInt conversion gives, edges and random values alike', () => {
  const b = Buffer.alloc(8);
  let seed = 7n;
  const random = Array.from({ length: 2000 }, () => {
    seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
    return BigInt.asIntN(64, seed);
  });
  for (const value of [...EDGES, ...random]) {
    b.writeBigInt64BE(value, 0);
    assert.equal(readLong(b, 0), Number(b.readBigInt64BE(0)), String(value));
  }
});

/** A write multi's reply holding one setData result whose stat is `fields` (8-byte ones as BigInts). */
function setDataReply(owner: bigint, long: bigint): Buffer {
  const b = Buffer.alloc(9 + 68 + 9);
  let at = b.writeInt32BE(5, 0); // setData
  at = b.writeUInt8(0, at);
  at = b.writeInt32BE(0, at);
  for (const v of [long, long + 1n, long + 2n, long + 3n]) at = b.writeBigInt64BE(BigInt.asIntN(64, v), at);
  at = b.writeInt32BE(7, at); // version
  at = b.writeInt32BE(8, at); // cversion
  at = b.writeInt32BE(9, at); // aversion
  at = b.writeBigUInt64BE(owner, at);
  at = b.writeInt32BE(100, at); // dataLength
  at = b.writeInt32BE(2, at); // numChildren
  at = b.writeBigInt64BE(BigInt.asIntN(64, long + 4n), at);
  at = b.writeInt32BE(-1, at);
  at = b.writeUInt8(1, at);
  b.writeInt32BE(-1, at);
  return b;
}

test('a stat in a write reply: every field as the BigInt conversion gives it, the owner as its hex text', () => {
  for (const owner of [0n, 1n, 0x1000_0000_0000_0000n, 0xffff_ffff_ffff_ffffn, 0x0000_0001_0000_0000n, 0x8000_0000n]) {
    for (const long of [0n, 2n ** 53n + 1n, -(2n ** 40n), 2n ** 63n - 5n]) {
      const stat = parseWriteReply(setDataReply(owner, long), 0)?.results[0]?.stat;
      assert.deepEqual(stat, {
        czxid: Number(BigInt.asIntN(64, long)),
        mzxid: Number(BigInt.asIntN(64, long + 1n)),
        ctime: Number(BigInt.asIntN(64, long + 2n)),
        mtime: Number(BigInt.asIntN(64, long + 3n)),
        version: 7,
        cversion: 8,
        aversion: 9,
        ephemeralOwner: owner.toString(16),
        dataLength: 100,
        numChildren: 2,
        pzxid: Number(BigInt.asIntN(64, long + 4n)),
      });
    }
  }
});
