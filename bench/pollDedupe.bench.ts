/**
 * Dedupe of a 10,000-item poll against remembered histories of 10k, 100k and 1M keys, for each dedupe
 * kind: time per poll and serialized state bytes per remembered key, side by side with the naive
 * baseline users hand-roll (an array of ids in static data, checked with `includes`), measured here.
 *   npx tsx bench/pollDedupe.bench.ts        (BENCH_HISTORIES=10000,100000 to shorten)
 */
import { performance } from 'node:perf_hooks';

import {
	type DedupeConfig,
	type DedupeStore,
	loadDedupeStore,
	PollExpressions,
} from '../core/poll';
import { DEDUPE_KINDS } from './dedupeKinds';

const POLL_SIZE = 10_000;
const HISTORIES = (process.env.BENCH_HISTORIES ?? '10000,100000,1000000').split(',').map(Number);
const REPEATS = 5;
/** Kinds whose state is a cursor, not one entry per key: their size does not grow with the history. */
const CURSOR_KINDS = new Set(['greatest', 'last']);
const expressions = new PollExpressions({ id: 'id', version: 'v' });

/** A poll's worth of items: string ids from `first` on (zero-padded so string order is numeric order), each with a version. */
function itemsFrom(first: number, count: number) {
	return Array.from({ length: count }, (_, i) => ({
		id: idOf(first + i),
		v: 1,
		name: `item ${first + i}`,
	}));
}

function idOf(n: number): string {
	return `ticket-${String(n).padStart(9, '0')}`;
}

/** One full poll through the real protocol: key, plan, commit (the runs' emits are n8n's part). */
async function poll(store: DedupeStore, items: unknown[], now: number): Promise<number> {
	const keyed = await expressions.keyItems(items, { withVersion: store.needsVersion });
	return store.commit(store.plan(keyed, now), now, { keyPrefix: 'poll:bench:' }).length;
}

async function withHistory(
	config: DedupeConfig,
	history: number,
): Promise<{ store: DedupeStore; next: number }> {
	let store = loadDedupeStore({ dedupe: config }).store;
	for (let first = 0; first < history; first += POLL_SIZE)
		await poll(store, itemsFrom(first, Math.min(POLL_SIZE, history - first)), Date.now());
	// As after a restart: the history comes back from its serialized form.
	store = loadDedupeStore({ dedupe: config }, JSON.parse(JSON.stringify(store.serialize()))).store;
	return { store, next: history };
}

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)];
}

/** Half of each poll is new, half was already remembered: the usual shape of a list endpoint. */
async function timePolls(store: DedupeStore, next: number): Promise<number> {
	const times: number[] = [];
	for (let r = 0; r < REPEATS; r++) {
		const items = itemsFrom(next - POLL_SIZE / 2 + r * POLL_SIZE, POLL_SIZE);
		const started = performance.now();
		await poll(store, items, Date.now());
		times.push(performance.now() - started);
	}
	return median(times);
}

/** The hand-rolled baseline: ids in an array (as in static data), `includes` per item, push the new ones. */
function timeBaseline(history: number): { ms: number; bytesPerKey: number; sampled: boolean } {
	const seen: string[] = Array.from({ length: history }, (_, i) => idOf(i));
	const bytesPerKey = JSON.stringify(seen).length / history;
	// At a million keys 10,000 linear scans take minutes: time a sample and scale it (said in the output).
	const sample = history >= 1_000_000 ? 200 : POLL_SIZE;
	const times: number[] = [];
	for (let r = 0; r < 3; r++) {
		const items = itemsFrom(history - sample / 2 + r * sample, sample);
		const started = performance.now();
		for (const item of items) if (!seen.includes(item.id)) seen.push(item.id);
		times.push(((performance.now() - started) * POLL_SIZE) / sample);
	}
	return { ms: median(times), bytesPerKey, sampled: sample !== POLL_SIZE };
}

async function main(): Promise<void> {
	const rows: string[][] = [
		[
			'kind',
			'history',
			'ms/poll',
			'bytes/key',
			'baseline ms/poll',
			'baseline bytes/key',
			'speed-up',
		],
	];
	const baselines = new Map(HISTORIES.map((h) => [h, timeBaseline(h)]));
	await timePolls((await withHistory(DEDUPE_KINDS[0], POLL_SIZE)).store, POLL_SIZE); // warm-up: JIT and GC settle before measuring
	for (const config of DEDUPE_KINDS) {
		for (const history of HISTORIES) {
			const { store, next } = await withHistory(config, history);
			const stateBytes = JSON.stringify(store.serialize()).length;
			const remembered = store.size;
			const ms = await timePolls(store, next);
			const baseline = baselines.get(history)!;
			rows.push([
				config.kind,
				history.toLocaleString('en'),
				ms.toFixed(1),
				CURSOR_KINDS.has(config.kind)
					? `${stateBytes} B total`
					: (stateBytes / remembered).toFixed(1),
				`${baseline.ms.toFixed(0)}${baseline.sampled ? ' (sampled)' : ''}`,
				baseline.bytesPerKey.toFixed(1),
				`${(baseline.ms / ms).toFixed(0)}×`,
			]);
		}
	}
	const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
	for (const row of rows)
		process.stdout.write(`${row.map((cell, c) => cell.padStart(widths[c])).join('  ')}\n`);
}

void main();
