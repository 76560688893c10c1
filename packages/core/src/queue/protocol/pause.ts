/**
 * Pausing a queue: the flag in `meta` (which also names the layout's
 * version). A claim made while the flag reads unset checks the version of
 * `meta` it read (a fence), so a pause written after the read stops it.
 */
import { LAYOUT_VERSION } from '../layout.js';
import type { ProtocolContext } from './context.js';

/** What `meta` holds: the layout's version and the pause flag. */
export function metaData(paused: boolean): Buffer {
  return Buffer.from(JSON.stringify({ layout: LAYOUT_VERSION, paused }));
}

/** Sets or clears the pause flag, whatever its version (safe to send again). */
export async function writePaused(ctx: ProtocolContext, paused: boolean): Promise<void> {
  const unit = { build: () => ({ ops: [{ op: 'setData' as const, path: ctx.layout.meta, data: metaData(paused) }] }) };
  const [result] = await ctx.executor.run([unit], { receipt: false });
  if (result && !result.ok) throw result.error;
}
