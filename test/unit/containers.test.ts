/**
 * Containers over a stub session: a tail whose read fails (the session
 * closed meanwhile) leaves no promise rejected unhandled, whoever looks at
 * it afterwards.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Session, SessionClosedError } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { Containers } from '../../packages/core/src/queue/protocol/containers.ts';

test('a pointer noted while its container tail fails to read leaves no unhandled rejection', async () => {
  const layout = new QueueLayout('q');
  const lane = `${layout.root}/ready/p-0000000000`;
  const session = {
    ensurePath: async () => undefined,
    getChildren: async (path: string) => {
      throw new SessionClosedError(path);
    },
    exists: async () => null,
  };
  const containers = new Containers(session as unknown as Session, layout);
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const prepared = containers.prepare(lane);
    containers.noteCreated(lane, `${lane}/b-0000000000/qn-1-0000000001`);
    await assert.rejects(prepared, SessionClosedError);
    await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.deepEqual(unhandled, []);
});
