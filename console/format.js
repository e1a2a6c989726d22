// Formatting helpers of the console: pure functions, no DOM, no network.

const pad2 = (n) => String(n).padStart(2, '0');

/** Seconds with two integer digits, keeping decimals the record has: 5 -> "05", 7.25 -> "07.25". */
function seconds(sec) {
  const value = Number(sec ?? 0);
  const [whole, fraction] = String(value).split('.');
  return fraction ? `${pad2(whole)}.${fraction}` : pad2(whole);
}

/**
 * One coordinate as degrees, minutes, seconds and hemisphere: `51°55′00″N`.
 * Empty when the degrees or the hemisphere are not set.
 */
export function dms(deg, min, sec, hemisphere) {
  if (deg === null || deg === undefined || deg === '' || !hemisphere) return '';
  return `${Number(deg)}°${pad2(Number(min ?? 0))}′${seconds(sec)}″${hemisphere}`;
}

/** The position of a port or inland facility record: `51°55′00″N 4°30′00″E`, or '' when unset. */
export function position(record) {
  const lat = dms(record.latitudeDeg, record.latitudeMin, record.latitudeSec, record.latitudeNs);
  const lon = dms(record.longitudeDeg, record.longitudeMin, record.longitudeSec, record.longitudeWe);
  return [lat, lon].filter(Boolean).join(' ');
}

/** Signed decimal degrees of one coordinate (south and west negative), or null. */
export function decimalDegrees(deg, min, sec, hemisphere) {
  if (deg === null || deg === undefined || !hemisphere) return null;
  const value = Number(deg) + Number(min ?? 0) / 60 + Number(sec ?? 0) / 3600;
  return hemisphere === 'S' || hemisphere === 'W' ? -value : value;
}

/** An RFC 3339 instant as `2026-12-01 09:00 UTC` (seconds only when not zero); '' when unset. */
export function dateTime(text) {
  if (!text) return '';
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) return String(text);
  const date = `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`;
  const secs = d.getUTCSeconds() ? `:${pad2(d.getUTCSeconds())}` : '';
  return `${date} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}${secs} UTC`;
}

/** Only the date part: `2026-12-01`. */
export function dateOnly(text) {
  return dateTime(text).slice(0, 10);
}

/** A byte count for people: `183 KB`, `1.5 MB`. */
export function bytes(n) {
  const value = Number(n);
  if (!Number.isFinite(value)) return '';
  if (value < 1000) return `${value} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let scaled = value;
  let unit = -1;
  do {
    scaled /= 1000;
    unit += 1;
  } while (scaled >= 1000 && unit < units.length - 1);
  return `${scaled >= 100 ? Math.round(scaled) : scaled.toFixed(1)} ${units[unit]}`;
}

/** A span of milliseconds: `45 min`, `2 h 30 min`, `3 d 4 h`. */
export function duration(ms) {
  const minutes = Math.round(ms / 60000);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

/** A number with thousands separators, as the record has it (no rounding of decimals). */
export function number(value) {
  if (value === null || value === undefined || value === '') return '';
  const n = Number(value);
  if (!Number.isFinite(n)) return String(value);
  const text = String(value).trim();
  if (!/^-?\d+(\.\d+)?$/.test(text)) return text;
  const sign = text.startsWith('-') ? '-' : '';
  const [whole, fraction] = text.replace('-', '').split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+$)/g, ',');
  return `${sign}${grouped}${fraction ? `.${fraction}` : ''}`;
}

/** The signs of quality result operators. */
export const OPERATORS = { lte: '≤', gte: '≥', lt: '<', gt: '>', eq: '=' };

/** `YYYY-MM-DD` (a date input's value) as the RFC 3339 start of that UTC day. */
export function dayStart(day) {
  return `${day}T00:00:00Z`;
}

/** `YYYY-MM-DD` as the RFC 3339 start of the next UTC day (an exclusive upper bound). */
export function dayAfter(day) {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().replace('.000Z', 'Z');
}
