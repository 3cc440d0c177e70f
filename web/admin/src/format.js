// Number formats for the tables.

export function duration(seconds) {
  if (seconds === undefined || seconds === null) return '–';
  let s = Math.floor(Number(seconds));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const hrs = Math.floor(s / 3600);
  s -= hrs * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (d) return `${d}d ${hrs}h`;
  if (hrs) return `${hrs}h ${m}m`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

export function bytes(n) {
  if (n === undefined || n === null || n === '') return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Number(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

export function count(n) {
  if (n === undefined || n === null) return '–';
  return Number(n).toLocaleString('en');
}

export function rate(n) {
  if (n === undefined || n === null) return '–';
  return `${Number(n).toFixed(Number(n) < 10 ? 1 : 0)}/s`;
}

export function time(ms) {
  if (!ms) return '';
  return new Date(Number(ms)).toLocaleTimeString();
}
