import { argumentError, booleanArg } from './args';

/**
 * The FTP ops' own pure parts: how they secure the connection (`tls`, `allowSelfSigned`: n8n's `ftp`
 * credential has no TLS field, so these are arguments in With) and the modification times of a `LIST`,
 * which FTP servers without MLSD (vsftpd) print for people: to the minute without a year, or to the day.
 */

export type FtpTls = 'none' | 'explicit' | 'implicit';
const TLS_MODES: readonly FtpTls[] = ['none', 'explicit', 'implicit'];

export interface FtpSecurity {
	/** `explicit`: AUTH TLS on the plain port (FTPS, port 21); `implicit`: TLS from the first byte (port 990). */
	tls: FtpTls;
	/** Accept a server certificate that does not verify (self-signed, internal CA). */
	allowSelfSigned: boolean;
}

export function securityArgs(args: Record<string, unknown>): FtpSecurity {
	const tls = args.tls ?? 'none';
	if (!TLS_MODES.includes(tls as FtpTls))
		throw argumentError(
			'tls',
			tls,
			`must be one of ${TLS_MODES.map((mode) => `"${mode}"`).join(', ')}`,
		);
	return {
		tls: tls as FtpTls,
		allowSelfSigned: booleanArg(args.allowSelfSigned, 'allowSelfSigned', false),
	};
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** A time read from a listing: its start, and how long the printed unit lasts (a minute, a day). */
export interface ListTime {
	mtimeMs: number;
	mtimeSpanMs: number;
}

/**
 * A Unix `LIST` time as basic-ftp hands it (`rawModifiedAt`), read as UTC (vsftpd's `use_localtime=NO`,
 * its default): `"Dec 03 11:21"`, printed for the last six months without a year, is the latest such
 * minute not after `now` + 1 day (a server clock a little ahead, a file from just before New Year);
 * `"Mar 01 2026"` is that day. Undefined for any other form.
 */
export function listTime(raw: string, now: number): ListTime | undefined {
	const match = /^([A-Za-z]{3})\s+(\d{1,2})\s+(?:(\d{1,2}):(\d{2})|(\d{4}))$/.exec(raw.trim());
	const month = match ? MONTHS.indexOf(match[1].toLowerCase()) : -1;
	if (!match || month === -1) return undefined;
	const day = Number(match[2]);
	const at = (year: number, hours = 0, minutes = 0) => {
		const time = Date.UTC(year, month, day, hours, minutes);
		// Date.UTC rolls 31 Apr or 29 Feb of a common year into the next month: not a date.
		return new Date(time).getUTCDate() === day && hours < 24 && minutes < 60 ? time : undefined;
	};
	if (match[5] !== undefined) {
		const mtimeMs = at(Number(match[5]));
		return mtimeMs === undefined ? undefined : { mtimeMs, mtimeSpanMs: DAY_MS };
	}
	const latest = now + DAY_MS;
	const year = new Date(latest).getUTCFullYear();
	// Feb 29 may be four years back; any other date is this year or the last.
	for (let back = 0; back <= 4; back++) {
		const mtimeMs = at(year - back, Number(match[3]), Number(match[4]));
		if (mtimeMs !== undefined && mtimeMs <= latest) return { mtimeMs, mtimeSpanMs: MINUTE_MS };
	}
	return undefined;
}
