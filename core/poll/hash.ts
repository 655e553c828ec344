/**
 * A fast 64-bit string hash in pure JS (cyrb53's two 32-bit lanes, kept whole instead of folded to
 * 53 bits). Measured on Node 24: about 0.15 µs per short key against about 2 µs for node:crypto's
 * sha256, which matters when a poll hashes 10,000 keys. It is not cryptographic: keys are the
 * source's own ids, nobody gains by forging a collision.
 *
 * The 64 bits are returned as a string of four UTF-16 code units: a cheap, exact Map/Set key (a
 * bigint is slower to build and compare) that is also trivially packed into 8 bytes.
 */
function lanes(text: string): [number, number] {
	let h1 = 0xdeadbeef;
	let h2 = 0x41c6ce57;
	for (let i = 0; i < text.length; i++) {
		const unit = text.charCodeAt(i);
		h1 = Math.imul(h1 ^ unit, 2654435761);
		h2 = Math.imul(h2 ^ unit, 1597334677);
	}
	h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
	h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
	h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
	h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
	return [h1 >>> 0, h2 >>> 0];
}

/** The all-zero hash marks a deleted record in packed state, so no real key may hash to it. */
export const DEAD_HASH = '\0\0\0\0';

/** 64-bit hash of `text` as four UTF-16 code units; never `DEAD_HASH`. */
export function hash64(text: string): string {
	const [h1, h2] = lanes(text);
	const hash = String.fromCharCode(h1 >>> 16, h1 & 0xffff, h2 >>> 16, h2 & 0xffff);
	return hash === DEAD_HASH ? '\0\0\0\u0001' : hash;
}

/** 32-bit unsigned hash of `text` (for spreading values, not for identity). */
export function hash32(text: string): number {
	return lanes(text)[0];
}
