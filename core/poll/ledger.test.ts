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

	it('keeps at most LEDGER_MAX_ENTRIES runs whose end it learnt, newest kept', () => {
		const ledger = new StartLedger();
		for (let i = 0; i < LEDGER_MAX_ENTRIES + 20; i++) {
			ledger.started(`k${i}`, [i], i);
			ledger.settled(`k${i}`, 'ended: success');
		}
		const list = ledger.list();
		expect(list).toHaveLength(LEDGER_MAX_ENTRIES);
		expect(list[0].key).toBe(`k${LEDGER_MAX_ENTRIES + 19}`);
		expect(list.at(-1)?.key).toBe('k20');
	});

	it('keeps the JSON of the runs whose end it learnt within LEDGER_MAX_BYTES however long the keys, and a batch shows its first keys and its count', () => {
		const ledger = new StartLedger();
		const long = (i: number) => `${i}-${'x'.repeat(500)}`;
		for (let i = 0; i < 40; i++) {
			ledger.started(
				`key-${i}`,
				Array.from({ length: 30 }, (_, j) => long(i * 100 + j)),
				i,
			);
			ledger.settled(`key-${i}`, 'ended: success');
		}
		expect(JSON.stringify(ledger.saved()).length).toBeLessThanOrEqual(LEDGER_MAX_BYTES);
		const [newest] = ledger.list();
		expect(newest.key).toBe('key-39');
		expect(newest.items).toHaveLength(MAX_KEYS_PER_ENTRY);
		expect(newest.itemCount).toBe(30);
		expect(String(newest.items[0])).toMatch(/…\(cut\)$/);
	});

	it('keeps every run whose end it has not learnt, whatever the burst size, until a Start Again names its items', () => {
		const ledger = new StartLedger();
		for (let i = 0; i < 1_000; i++) ledger.started(`k${i}`, [`item-${i}`], i);
		for (let i = 0; i < 1_000; i++)
			if (i !== 37 && i !== 512) ledger.settled(`k${i}`, 'ended: success');
		// n8n stopped while k37 and k512 ran: emitted again at the next activation, they existed.
		for (const key of ['k37', 'k512']) ledger.settled(key, 'existed at activation');
		const reloaded = new StartLedger(JSON.parse(JSON.stringify(ledger.saved())));
		expect(reloaded.endUnknown().map((entry) => entry.items)).toEqual([['item-512'], ['item-37']]);
		expect(reloaded.list().length).toBeLessThanOrEqual(LEDGER_MAX_ENTRIES + 2);
		reloaded.startedAgain(['item-37']);
		expect(reloaded.endUnknown().map((entry) => entry.key)).toEqual(['k512']);
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
		expect(() => parseStartAgain('INC-1, INC-2')).toThrow(/"«startAgain»"/);
		expect(() => parseStartAgain('[true]')).toThrow(/non-empty string or a finite number/);
		expect(() => parseStartAgain(JSON.stringify(Array.from({ length: 501 }, (_, i) => i)))).toThrow(
			/at most 500/,
		);
	});
});
