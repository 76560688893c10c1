/**
 * Pausing a queue: the flag in `meta` (which also names the layout's
 * version). A claim made while the flag reads unset checks the version of
 * `meta` it read (a fence), so a pause written after the read stops it.
 * A single plain write, whatever the version: sending it twice is harmless.
 */
import { LAYOUT_VERSION } from '../layout.js';
import type { ProtocolContext } from './context.js';

/** What `meta` holds: the layout's version and the pause flag. */
export function metaData(paused: boolean): Buffer {
  return Buffer.from(JSON.stringify({ layout: LAYOUT_VERSION, paused }));
}

/** What `meta` says: its layout (undefined when unreadable) and pause flag. */
export function readMeta(data: Buffer): { layout: unknown; paused: boolean } {
  try {
    const meta = JSON.parse(data.toString()) as { layout?: unknown; paused?: unknown } | null;
    return { layout: meta?.layout, paused: meta?.paused === true };
  } catch {
    return { layout: undefined, paused: false };
  }
}

/** Sets or clears the pause flag. */
export async function writePaused(ctx: Pick<ProtocolContext, 'session' | 'layout'>, paused: boolean): Promise<void> {
  await ctx.session.setData(ctx.layout.meta, metaData(paused));
}
