import { DEAD_HASH } from './hash';

/** Writes `text`'s UTF-16 code units into `bytes` at `offset`, two bytes each, big-endian. */
export function writeUnits(bytes: Uint8Array, offset: number, text: string): void {
	// Byte stores rather than Buffer.writeUInt16BE: this runs for every key of every poll.
	for (let unit = 0; unit < text.length; unit++) {
		const code = text.charCodeAt(unit);
		bytes[offset + 2 * unit] = code >>> 8;
		bytes[offset + 2 * unit + 1] = code & 0xff;
	}
}

/** Reads `units` UTF-16 code units from `bytes` at `offset`. */
export function readUnits(bytes: Uint8Array, offset: number, units: number): string {
	let text = '';
	for (let unit = 0; unit < units; unit++)
		text += String.fromCharCode((bytes[offset + 2 * unit] << 8) | bytes[offset + 2 * unit + 1]);
	return text;
}

/** Seconds since the epoch as two UTF-16 code units (a uint32 lasts until 2106). */
export function packSeconds(ms: number): string {
	const seconds = Math.floor(ms / 1000);
	return String.fromCharCode(seconds >>> 16, seconds & 0xffff);
}

export function unpackSeconds(units: string): number {
	return (units.charCodeAt(0) * 0x10000 + units.charCodeAt(1)) * 1000;
}

/** Code units as hex, for JSON that must hold no control characters or lone surrogates. */
export function unitsToHex(units: string): string {
	let hex = '';
	for (let i = 0; i < units.length; i++) hex += units.charCodeAt(i).toString(16).padStart(4, '0');
	return hex;
}

export function hexToUnits(hex: string): string {
	if (!/^(?:[0-9a-f]{4})*$/.test(hex)) throw new Error(`${JSON.stringify(hex)} is not packed hex`);
	let units = '';
	for (let i = 0; i < hex.length; i += 4)
		units += String.fromCharCode(parseInt(hex.slice(i, i + 4), 16));
	return units;
}

/** 64-bit hashes (four code units each) as one base64 string. */
export function packHashes(hashes: readonly string[]): string {
	const bytes = Buffer.alloc(8 * hashes.length);
	hashes.forEach((hash, i) => writeUnits(bytes, 8 * i, hash));
	return bytes.toString('base64');
}

export function unpackHashes(text: unknown): string[] {
	if (typeof text !== 'string') throw new Error('packed hashes must be a base64 string');
	const bytes = Buffer.from(text, 'base64');
	if (bytes.length % 8 !== 0)
		throw new Error(`packed hashes hold ${bytes.length} bytes, not whole 8-byte hashes`);
	return Array.from({ length: bytes.length / 8 }, (_, i) => readUnits(bytes, 8 * i, 4));
}

/**
 * Fixed-size records (a 64-bit key hash plus a fixed-size value, both strings of UTF-16 code units as
 * hash.ts makes them) packed into byte chunks, saved as one base64 string per chunk. Why chunks: a
 * history of a million keys is megabytes and most of it does not change between polls; a chunk's
 * base64 is cached until one of its records is written, so saving after a poll re-encodes only the
 * chunks that poll touched. A record is deleted by overwriting its hash with DEAD_HASH.
 */
class RecordLog {
	static readonly RECORDS_PER_CHUNK = 4096;

	private readonly recordBytes: number;
	private readonly chunkBytes: number;
	private readonly chunks: Buffer[] = [];
	/** Base64 of each chunk, or undefined once the chunk was written to. */
	private readonly encoded: Array<string | undefined> = [];
	private count = 0;
	private dead = 0;

	constructor(private readonly valueUnits: number) {
		this.recordBytes = 8 + 2 * valueUnits;
		this.chunkBytes = this.recordBytes * RecordLog.RECORDS_PER_CHUNK;
	}

	/** Rebuilds a log from `saved()` output; throws if the text cannot be records of this size. */
	static load(valueUnits: number, savedChunks: unknown): RecordLog {
		const log = new RecordLog(valueUnits);
		if (!Array.isArray(savedChunks) || !savedChunks.every((chunk) => typeof chunk === 'string')) {
			throw new Error('entries must be a list of base64 strings');
		}
		const texts = savedChunks as string[];
		const bytes = Buffer.concat(texts.map((text) => Buffer.from(text, 'base64')));
		if (bytes.length % log.recordBytes !== 0) {
			throw new Error(
				`entries hold ${bytes.length} bytes, not a whole number of ${log.recordBytes}-byte records`,
			);
		}
		// Saved chunks line up with ours when all but the last are full; then their text is reused as is.
		const aligned = texts.every(
			(text, i) => i === texts.length - 1 || Buffer.byteLength(text, 'base64') === log.chunkBytes,
		);
		for (let offset = 0; offset < bytes.length; offset += log.chunkBytes) {
			const chunk = Buffer.alloc(log.chunkBytes);
			bytes.copy(chunk, 0, offset, Math.min(offset + log.chunkBytes, bytes.length));
			log.encoded.push(aligned ? texts[log.chunks.length] : undefined);
			log.chunks.push(chunk);
		}
		log.count = bytes.length / log.recordBytes;
		for (let slot = 0; slot < log.count; slot++) if (log.hashAt(slot) === DEAD_HASH) log.dead++;
		return log;
	}

	/** Records written, live or dead. */
	get length(): number {
		return this.count;
	}

	get deadCount(): number {
		return this.dead;
	}

	append(hash: string, value: string): number {
		const slot = this.count++;
		if (slot % RecordLog.RECORDS_PER_CHUNK === 0) {
			this.chunks.push(Buffer.alloc(this.chunkBytes));
			this.encoded.push(undefined);
		}
		this.write(slot, 0, hash);
		this.write(slot, 8, value);
		return slot;
	}

	hashAt(slot: number): string {
		return readUnits(this.chunkOf(slot), this.offsetOf(slot), 4);
	}

	valueAt(slot: number): string {
		return readUnits(this.chunkOf(slot), this.offsetOf(slot) + 8, this.valueUnits);
	}

	setValue(slot: number, value: string): void {
		this.write(slot, 8, value);
	}

	kill(slot: number): void {
		this.write(slot, 0, DEAD_HASH);
		this.dead++;
	}

	/** The length of `JSON.stringify(saved())`, computed without encoding anything. */
	get savedJsonLength(): number {
		if (this.chunks.length === 0) return 2; // []
		// [ and ], and per chunk its base64 in quotes and a comma (the last has none).
		let length = 1;
		for (let i = 0; i < this.chunks.length; i++) length += 4 * Math.ceil(this.usedBytes(i) / 3) + 3;
		return length;
	}

	/** One base64 string per chunk; only chunks written since the last call are encoded. */
	saved(): string[] {
		return this.chunks.map((chunk, i) => {
			const text = this.encoded[i] ?? chunk.toString('base64', 0, this.usedBytes(i));
			this.encoded[i] = text;
			return text;
		});
	}

	/** Bytes of chunk `i` that hold records (all but the last chunk are full). */
	private usedBytes(chunk: number): number {
		return Math.min(
			this.chunkBytes,
			(this.count - chunk * RecordLog.RECORDS_PER_CHUNK) * this.recordBytes,
		);
	}

	private chunkOf(slot: number): Buffer {
		return this.chunks[Math.floor(slot / RecordLog.RECORDS_PER_CHUNK)];
	}

	private offsetOf(slot: number): number {
		return (slot % RecordLog.RECORDS_PER_CHUNK) * this.recordBytes;
	}

	private write(slot: number, byteOffset: number, text: string): void {
		writeUnits(this.chunkOf(slot), this.offsetOf(slot) + byteOffset, text);
		this.encoded[Math.floor(slot / RecordLog.RECORDS_PER_CHUNK)] = undefined;
	}
}

/** Dead records are reclaimed once they pass half the live ones (and are worth a rewrite), so saved state stays under 1.5× live. */
const MIN_DEAD_TO_COMPACT = 1024;

/**
 * A map from 64-bit key hash to a fixed-size value, in insertion order, backed by a RecordLog.
 * Reads and writes are O(1); loading is O(history) once per activation; saving re-encodes only
 * changed chunks. Insertion order lets a time window drop its oldest entries in O(dropped).
 */
export class PackedIndex {
	/** Hash → slot in the log, in insertion order. */
	private readonly slots = new Map<string, number>();
	private log: RecordLog;
	/**
	 * Set: every change is also told here as one journal entry (historyStore.ts), which replay()
	 * applies again: `s`, `r` (set, renew) + hash + value, or `d` (delete) + hash, in hex.
	 */
	onChange: ((entry: string) => void) | undefined;

	/** `valueUnits`: the value's length in UTF-16 code units (2 bytes each). */
	constructor(
		private readonly valueUnits: number,
		savedEntries?: unknown,
	) {
		this.log =
			savedEntries === undefined
				? new RecordLog(valueUnits)
				: RecordLog.load(valueUnits, savedEntries);
		for (let slot = 0; slot < this.log.length; slot++) {
			const hash = this.log.hashAt(slot);
			if (hash !== DEAD_HASH) this.slots.set(hash, slot);
		}
	}

	get size(): number {
		return this.slots.size;
	}

	get(hash: string): string | undefined {
		const slot = this.slots.get(hash);
		return slot === undefined ? undefined : this.log.valueAt(slot);
	}

	/** Sets the value in place, keeping the entry's position (a new hash goes last). */
	set(hash: string, value: string): void {
		this.onChange?.(`s${unitsToHex(hash)}${unitsToHex(value)}`);
		this.put(hash, value);
	}

	/** Sets the value and moves the entry last, as if it were new. */
	renew(hash: string, value: string): void {
		this.onChange?.(`r${unitsToHex(hash)}${unitsToHex(value)}`);
		this.remove(hash);
		this.put(hash, value);
	}

	delete(hash: string): void {
		if (!this.slots.has(hash)) return;
		this.onChange?.(`d${unitsToHex(hash)}`);
		this.remove(hash);
	}

	/** Deletes entries from the oldest while `expired(value)` holds; O(deleted). */
	deleteOldestWhile(expired: (value: string) => boolean): void {
		for (const [hash, slot] of this.slots) {
			if (!expired(this.log.valueAt(slot))) break;
			this.delete(hash);
		}
	}

	/**
	 * Deletes the oldest entries whose hash is not in `keep` until at most `max` remain (fewer
	 * cannot be reached when `keep` holds more); returns how many it deleted. O(deleted + kept).
	 */
	deleteOldestBeyond(max: number, keep: ReadonlySet<string>): number {
		let deleted = 0;
		for (const hash of this.slots.keys()) {
			if (this.slots.size <= max) break;
			if (keep.has(hash)) continue;
			this.delete(hash);
			deleted++;
		}
		return deleted;
	}

	/** Applies journal entries (see onChange) in order; throws on one that is not an entry of this index. */
	replay(entries: readonly unknown[]): void {
		const hashHex = 16;
		const valueHex = 4 * this.valueUnits;
		for (const entry of entries) {
			const op = typeof entry === 'string' ? entry[0] : undefined;
			const length = op === 'd' ? 1 + hashHex : 1 + hashHex + valueHex;
			if ((op !== 's' && op !== 'r' && op !== 'd') || (entry as string).length !== length)
				throw new Error(`${JSON.stringify(entry)} is not a journal entry of this history`);
			const text = entry as string;
			const hash = hexToUnits(text.slice(1, 1 + hashHex));
			if (op === 'd') this.delete(hash);
			else if (op === 'r') this.renew(hash, hexToUnits(text.slice(1 + hashHex)));
			else this.set(hash, hexToUnits(text.slice(1 + hashHex)));
		}
	}

	/** JSON-safe packed entries: base64 strings of fixed-size records. */
	saved(): string[] {
		return this.log.saved();
	}

	/** How long the JSON of saved() is (live and dead records), without encoding it. */
	get savedJsonLength(): number {
		return this.log.savedJsonLength;
	}

	/** set() without its journal entry. */
	private put(hash: string, value: string): void {
		const slot = this.slots.get(hash);
		if (slot === undefined) this.slots.set(hash, this.log.append(hash, value));
		else this.log.setValue(slot, value);
	}

	/** delete() without its journal entry. */
	private remove(hash: string): void {
		const slot = this.slots.get(hash);
		if (slot === undefined) return;
		this.log.kill(slot);
		this.slots.delete(hash);
		this.compactIfWorthIt();
	}

	private compactIfWorthIt(): void {
		if (this.log.deadCount < MIN_DEAD_TO_COMPACT || this.log.deadCount * 2 <= this.slots.size)
			return;
		const old = this.log;
		this.log = new RecordLog(this.valueUnits);
		// Re-setting an existing Map key keeps its position, so order survives.
		for (const [hash, slot] of this.slots)
			this.slots.set(hash, this.log.append(hash, old.valueAt(slot)));
	}
}
