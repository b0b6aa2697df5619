import calendar
import datetime as dt
import zoneinfo

d = dt.datetime(2024, 2, 28, 23, 30, tzinfo=dt.timezone.utc)
print(d + dt.timedelta(hours=1), (d + dt.timedelta(days=1)).date(), d.isocalendar())
print(d.strftime("%A %d %B %Y %I:%M %p %z %j %U"), d.isoformat(), d.timestamp())
print(dt.datetime.fromisoformat("2023-07-04T12:00:00+02:00").astimezone(dt.timezone.utc))
print(dt.datetime.strptime("03/15/21 14:05", "%m/%d/%y %H:%M"), dt.date(2000, 1, 1).toordinal())
print(dt.date(2024, 3, 10) - dt.date(1999, 12, 31), dt.timedelta(seconds=100000))
paris = zoneinfo.ZoneInfo("Europe/Paris")
ny = zoneinfo.ZoneInfo("America/New_York")
for month in (1, 7):
    t = dt.datetime(2023, month, 1, 12, tzinfo=paris)
    print(t, t.tzname(), t.astimezone(ny), t.astimezone(ny).tzname())
print(dt.datetime(2023, 3, 26, 1, 30, tzinfo=dt.timezone.utc).astimezone(paris))
print(calendar.isleap(2100), calendar.monthrange(2024, 2), calendar.weekday(2024, 1, 1))
print(calendar.month(2024, 2))
now = dt.datetime.now(dt.timezone.utc)
print(now.year >= 2024, dt.date.today() >= dt.date(2024, 1, 1), now.tzinfo is dt.timezone.utc)
print(dt.datetime.fromtimestamp(0, dt.timezone.utc), dt.datetime.utcfromtimestamp(86400 * 365.25 * 30))
