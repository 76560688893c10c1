/**
 * The edge with node-zookeeper-client: conversions between its objects and
 * the session layer's own types, and the runtime extensions of the client,
 * each on its exact release only (WIRE_CLIENT_VERSION; unit tests pin the
 * internals they use). The parts, under wire/:
 *
 * - convert.ts: modes, ACLs, stats, watch events and error codes;
 * - connection.ts: dropping a connection, torn replies, refusals;
 * - codes.ts: error codes the client does not know (a later server's) made
 *   errors of the request they answer instead of exceptions thrown from its
 *   socket;
 * - tls.ts: TLS (the client only opens plain TCP sockets);
 * - sasl.ts: SASL DIGEST-MD5 before any other request;
 * - multi.ts, requests.ts, replies.ts: the read-only multi and a write multi
 *   serialized here, their replies parsed in place;
 * - pipe.ts, pipe-check.ts, frames.ts, direct.ts: the request pipe (fewer
 *   writes, copies and wrappers per request);
 * - internals.ts: the release they were written against, and the client's
 *   insides as they see them.
 *
 * Only the parts under wire/ load the client; the session layer (session.ts
 * and the files it is made of) reaches it through this module alone.
 */

export { acceptUnknownErrorCodes, unknownCodeProblems } from './wire/codes.js';
export { discardTornReplies, dropConnection, onConnectionRefused, refusalCode } from './wire/connection.js';
export {
  eventType,
  exactVersion,
  toStat,
  type WireClient,
  wire,
  wireAcl,
  wireErrorCode,
  wireMode,
} from './wire/convert.js';
export { WIRE_CLIENT_VERSION } from './wire/internals.js';
export { assertReadMultiSupported, sendMulti, sendReadMulti, wireClientProblems } from './wire/multi.js';
export { tuneClient } from './wire/pipe.js';
export { requestPipeProblems } from './wire/pipe-check.js';
export { parseReadReply, parseWriteReply, type WireReadResult, type WriteResult } from './wire/replies.js';
export type { WireOp, WireRead } from './wire/requests.js';
export { useSasl } from './wire/sasl.js';
export { isSecurityFailure, onSecurityFailure, tlsProblems, useTls } from './wire/tls.js';
