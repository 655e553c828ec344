import { ConfigError } from '../configError';
import {
	LEDGER_MAX_BYTES,
	LEDGER_MAX_ENTRIES,
	MAX_KEYS_PER_ENTRY,
	parseStartAgain,
	StartLedger,
} from './ledger';

describe('StartLedger', () => {
	it('records each start with its items and how n8n settled it, newest first, across a save and load', () => {
		const ledger = new StartLedger();
		ledger.started('k1', ['a'], 1_000);
		ledger.started('k2', [2], 2_000);
		ledger.settled('k1', 'ended: success');
		ledger.settled('gone', 'existed');
		const reloaded = new StartLedger(JSON.parse(JSON.stringify(ledger.saved())));
		expect(reloaded.list()).toEqual([
			{ key: 'k2', items: [2], at: 2_000, outcome: 'emitted' },
			{ key: 'k1', items: ['a'], at: 1_000, outcome: 'ended: success' },
		]);
	});

	it('keeps at most LEDGER_MAX_ENTRIES entries, newest kept', () => {
		const ledger = new StartLedger();
		for (let i = 0; i < LEDGER_MAX_ENTRIES + 20; i++) ledger.started(`k${i}`, [i], i);
		const list = ledger.list();
		expect(list).toHaveLength(LEDGER_MAX_ENTRIES);
		expect(list[0].key).toBe(`k${LEDGER_MAX_ENTRIES + 19}`);
		expect(list.at(-1)?.key).toBe('k20');
	});

	it('keeps its JSON within LEDGER_MAX_BYTES however long the keys, and a batch shows its first keys and its count', () => {
		const ledger = new StartLedger();
		const long = (i: number) => `${i}-${'x'.repeat(500)}`;
		for (let i = 0; i < 40; i++)
			ledger.started(
				`key-${i}`,
				Array.from({ length: 30 }, (_, j) => long(i * 100 + j)),
				i,
			);
		expect(JSON.stringify(ledger.saved()).length).toBeLessThanOrEqual(LEDGER_MAX_BYTES);
		const [newest] = ledger.list();
		expect(newest.key).toBe('key-39');
		expect(newest.items).toHaveLength(MAX_KEYS_PER_ENTRY);
		expect(newest.itemCount).toBe(30);
		expect(String(newest.items[0])).toMatch(/…\(cut\)$/);
	});

	it('a start recorded again (the same key emitted after a restart) is one entry', () => {
		const ledger = new StartLedger();
		ledger.started('k', ['a'], 1);
		ledger.started('k', ['a'], 2);
		expect(ledger.list()).toHaveLength(1);
	});
});

describe('parseStartAgain', () => {
	it('reads a JSON list of keys as Execute step shows them; empty is none', () => {
		expect(parseStartAgain(' ["INC-1", 42] ')).toEqual(['INC-1', 42]);
		expect(parseStartAgain('"INC-1"')).toEqual(['INC-1']);
		expect(parseStartAgain('')).toEqual([]);
	});

	it('refuses what is not a list of keys, naming the option', () => {
		expect(() => parseStartAgain('INC-1, INC-2')).toThrow(ConfigError);
		expect(() => parseStartAgain('INC-1, INC-2')).toThrow(/"Start Again \(Item Keys\)"/);
		expect(() => parseStartAgain('[true]')).toThrow(/non-empty string or a finite number/);
		expect(() => parseStartAgain(JSON.stringify(Array.from({ length: 501 }, (_, i) => i)))).toThrow(
			/at most 500/,
		);
	});
});
