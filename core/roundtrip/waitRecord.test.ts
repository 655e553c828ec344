import {
	callbackUrlFor,
	decodeWaitRecord,
	encodeWaitRecord,
	newWait,
	signNotice,
	verifyNotice,
} from './waitRecord';

const STARTED = Date.UTC(2026, 0, 1, 12);
const fixedRandom = (bytes: number) => Buffer.alloc(bytes, 7);

describe('wait record', () => {
	it('round-trips through the text n8n keeps as custom data, within its 255 characters', () => {
		const record = newWait(STARTED, STARTED + 366 * 86_400_000, true);
		const text = encodeWaitRecord(record);
		expect(text.length).toBeLessThanOrEqual(255);
		expect(decodeWaitRecord(text)).toEqual(record);
	});

	it('gives Send and Wait a fresh wait id and Wait Only none', () => {
		expect(newWait(STARTED, STARTED + 1000, true).waitId).toMatch(/^[A-Za-z0-9_-]{22}$/);
		expect(newWait(STARTED, STARTED + 1000, true).waitId).not.toBe(
			newWait(STARTED, STARTED + 1000, true).waitId,
		);
		expect(newWait(STARTED, STARTED + 1000, false).waitId).toBe('');
	});

	it.each([
		undefined,
		'',
		'not json',
		'{"v":2,"w":"","s":1,"d":2,"k":"k"}',
		'{"v":1,"w":"","s":"1","d":2,"k":"k"}',
		'{"v":1,"w":"","s":1,"d":2,"k":""}',
	])('reads %p as no record', (text) => {
		expect(decodeWaitRecord(text)).toBeUndefined();
	});
});

describe('callbackUrlFor', () => {
	it("adds the wait id to n8n's resume URL, keeping its signature token", () => {
		expect(callbackUrlFor('http://localhost:5678/webhook-waiting/42?signature=abc', 'w1')).toBe(
			'http://localhost:5678/webhook-waiting/42?signature=abc&rtw=w1',
		);
	});

	it('leaves the URL alone without a wait id', () => {
		expect(callbackUrlFor('http://localhost:5678/webhook-waiting/42?signature=abc', '')).toBe(
			'http://localhost:5678/webhook-waiting/42?signature=abc',
		);
	});
});

describe('internal notice', () => {
	const record = newWait(STARTED, STARTED + 1000, true, fixedRandom);

	it('verifies only with this wait and this body', () => {
		const header = signNotice(record, '{"failed":true}');
		expect(verifyNotice(record, header, '{"failed":true}')).toEqual({ ok: true });
		expect(verifyNotice(record, header, '{"failed":false}')).toMatchObject({
			ok: false,
			status: 403,
		});
		const other = newWait(STARTED, STARTED + 1000, true);
		expect(verifyNotice(other, header, '{"failed":true}')).toMatchObject({
			ok: false,
			status: 403,
		});
	});
});
