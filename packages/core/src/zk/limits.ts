/**
 * ZooKeeper's size limits as the session layer enforces them. Kept apart from
 * wire.ts so that the public declarations never reach the wire client's types.
 */

/** ZooKeeper's packet limit (jute.maxbuffer default): data and requests must stay below it. */
export const PACKET_LIMIT_BYTES = 1024 * 1024;
/** Largest node data the session layer sends, leaving room for the request's header and path. */
export const MAX_DATA_BYTES = PACKET_LIMIT_BYTES - 8 * 1024;
