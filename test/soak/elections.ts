/**
 * What explains a housekeeping election after a soak: the election nodes
 * each queue holds (read before the workers are killed, while their
 * sessions live), each with the session that owns it (ephemeralOwner) and
 * the worker whose session that is; and each worker's election steps
 * (worker-child.ts logs them from the `zkq:election` channel).
 */
import { NoNodeError, Session } from '@zkq/core';
import { QueueStore } from '@zkq/core/internal';
import type { FaultEvent, WorkerEvent } from './history.js';

/** One election node: name, the id it holds, and its owner session (hex). */
export interface ElectionNode {
  name: string;
  id: string;
  owner: string;
}

/** The election nodes of each queue, by sequence; undefined when the server could not be read. */
export async function readElections(
  connectionString: string,
  prefix: string,
  queues: string[],
): Promise<Map<string, ElectionNode[]> | undefined> {
  let session: Session | undefined;
  try {
    session = await Session.connect({ connectionString, namespace: prefix, connectTimeout: 5000 });
    const out = new Map<string, ElectionNode[]>();
    for (const q of queues) {
      const dir = new QueueStore(session, q).layout.leaderDir;
      const names = await session
        .getChildren(dir)
        .catch((err) => (err instanceof NoNodeError ? [] : Promise.reject(err)));
      const nodes: ElectionNode[] = [];
      for (const name of names.sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)))) {
        const read = await session.getData(`${dir}/${name}`).catch(() => undefined);
        if (read) nodes.push({ name, id: read.data.toString(), owner: read.stat.ephemeralOwner });
      }
      out.set(q, nodes);
    }
    return out;
  } catch {
    return undefined;
  } finally {
    await session?.close();
  }
}

/** Lines naming each queue's election nodes and whose live or dead session owns each. */
export function describeElections(elections: Map<string, ElectionNode[]> | undefined, events: WorkerEvent[]): string[] {
  if (!elections) return ['elections: the server could not be read'];
  // the sessions each worker logged, newest last: a node of an older session of a live worker is a leftover
  const sessions = new Map<string, { w: string; q: string; ts: number }>();
  for (const e of events) {
    const s = e as { k: string; sid?: string; q?: string };
    if (s.k === 'session' && s.sid) sessions.set(s.sid, { w: e.w, q: s.q ?? '?', ts: e.ts });
  }
  const lines: string[] = [];
  for (const [q, nodes] of elections) {
    lines.push(`election of ${q}: ${nodes.length} node(s)${nodes.length > 0 ? ', lowest first' : ''}`);
    for (const n of nodes) {
      const s = sessions.get(n.owner);
      const who = s ? `${s.w}'s ${s.q} session` : 'a session no worker logged';
      lines.push(`  ${n.name} id ${n.id} owner ${n.owner} (${who})`);
    }
  }
  return lines;
}

/** Every election step of `queue` and every fault, in time order, one line each (the last `max`; 0: all). */
export function electionTimeline(
  events: WorkerEvent[],
  faults: FaultEvent[],
  queue: string,
  started: number,
  max = 60,
): string[] {
  const steps: { ts: number; w: string; k: string; rest: object }[] = [];
  for (const e of events) {
    if ((e.k !== 'election' && e.k !== 'leader' && e.k !== 'session') || (e as { q?: string }).q !== queue) continue;
    const { w, ts, k, q: _q, ...rest } = e as WorkerEvent & { q?: string };
    steps.push({ ts, w, k, rest });
  }
  for (const { ts, kind, target, ms, note } of faults) {
    steps.push({ ts, w: '--', k: `fault ${kind}`, rest: { target, ms, ...(note ? { note } : {}) } });
  }
  steps.sort((a, b) => a.ts - b.ts);
  return (max > 0 ? steps.slice(-max) : steps).map(({ ts, w, k, rest }) => {
    const detail = Object.entries(rest)
      .map(([key, v]) => `${key}=${v}`)
      .join(' ');
    return `  ${((ts - started) / 1000).toFixed(1)} s ${w} ${k} ${detail}`;
  });
}
