"""Benign text in the register the newer attack sources are written in,
written for this project (CC0, like the rest of the repo's own text):
business and everyday email and threads, support tickets, memos, meeting
notes, invitations, bookings, bank and shop notices, reviews, colleagues'
chat, to-do lists and HR and IT announcements. Many use the attacks' own
words harmlessly ("please ignore the previous email", "send the file to",
"urgent", "password reset"): a person writing to a person, not an
instruction slipped to an assistant.

Two parts: texts composed from the pools below (deterministic for a given
`random.Random`), and the whole texts written out in `business_texts.txt`
(separated by lines holding only `%%`).
"""

import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
WHOLE = os.path.join(HERE, "business_texts.txt")

FIRST = [
    "Anna", "Ben", "Chiara", "Dmitri", "Elif", "Farid", "Grace", "Hiroshi", "Ines", "Jonas",
    "Kavya", "Lars", "Maribel", "Nkechi", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tomasz",
    "Ursula", "Vikram", "Wen", "Ximena", "Yusuf", "Zofia", "Amara", "Bruno", "Carmen", "Deepak",
    "Emeka", "Fatima", "Giulia", "Hannah", "Ivan", "Julie", "Kenji", "Leila", "Mateo", "Noor",
]
LAST = [
    "Okafor", "Lindqvist", "Moreau", "Tanaka", "Kowalski", "Rossi", "Haddad", "Novak", "Fischer",
    "Silva", "Nguyen", "Petrov", "Walsh", "Iyer", "Brandt", "Costa", "Yilmaz", "Mensah", "Park",
    "Dubois", "Andersen", "Garcia", "Schmidt", "Kaur", "O'Brien", "Horvath", "Sato", "Ferreira",
]
COMPANIES = [
    "Harbourline Logistics", "Quillstone Legal", "Brightmoor Dental", "Tallgrass Foods", "Norvik Energy",
    "Copperleaf Design", "Ardent Health Partners", "Kestrel Analytics", "Birchwood Property", "Sunmere Hotels",
    "Polaris Freight", "Greenhollow Farms", "Meridian Print Co.", "Oakridge Accounting", "Lumen Optics",
    "Fjordline Travel", "Redbrick Builders", "Silverpine Software", "Marigold Catering", "Bluecrest Insurance",
]
DOMAINS = ["example.com", "example.org", "example.net", "mail.example.com", "corp.example"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
TIMES = ["8:30", "9:00", "9:30", "10:00", "11:15", "13:00", "14:00", "15:30", "16:00", "17:00"]
PLACES = ["Lisbon", "Rotterdam", "Leeds", "Kraków", "Lyon", "Valencia", "Bologna", "Hamburg", "Pune",
          "Osaka", "Austin", "Calgary", "Nairobi", "Santiago", "Brisbane", "Tallinn", "Porto", "Graz"]
ITEMS = ["the Q3 budget", "the onboarding checklist", "the supplier contract", "the revised floor plan",
         "the March invoices", "the training schedule", "the audit findings", "the new price list",
         "the catering order", "the customer survey results", "the insurance renewal", "the shift rota",
         "the board slides", "the expense report", "the press release draft", "the warehouse inventory"]


def person(rng: random.Random) -> tuple[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    addr = f"{first.lower()}.{last.lower().replace(chr(39), '')}@{rng.choice(DOMAINS)}"
    return f"{first} {last}", addr


def date(rng: random.Random) -> str:
    return f"{rng.choice(DAYS)} {rng.randint(1, 28)} {rng.choice(MONTHS)}"


def fill(t: str, rng: random.Random) -> str:
    """Fills `{name}`, `{first}`, `{company}`, `{item}`, `{day}`, `{time}`,
    `{place}`, `{n}` and `{amount}` slots, each occurrence afresh."""
    slots = {
        "name": lambda: person(rng)[0], "first": lambda: rng.choice(FIRST),
        "company": lambda: rng.choice(COMPANIES), "item": lambda: rng.choice(ITEMS),
        "day": lambda: date(rng), "time": lambda: rng.choice(TIMES), "place": lambda: rng.choice(PLACES),
        "n": lambda: str(rng.randint(2, 9999)), "email": lambda: person(rng)[1],
        "amount": lambda: f"{rng.choice(['€', '$', '£', ''])}{rng.randint(12, 9800)}.{rng.randint(0, 99):02d}",
    }
    for key, make in slots.items():
        while "{" + key + "}" in t:
            t = t.replace("{" + key + "}", make(), 1)
    return t


# --- email -----------------------------------------------------------------

GREETINGS = ["Hi {first},", "Hello {first},", "Dear {name},", "Hey {first},", "Good morning {first},",
             "Hi all,", "Hi team,", "Dear colleagues,", "{first},", "Dear Sir or Madam,"]
BODIES = [
    "Please ignore the previous email, I attached the wrong version of {item}. The correct one is attached now.",
    "Could you send the file to {email} before {day}? She needs it for the review.",
    "This is urgent: the courier comes at {time} and the customs forms are still unsigned.",
    "The instructions for the new expense system are on the intranet; the old forms stop working on {day}.",
    "Our system will be down for maintenance on {day} from {time} for about two hours.",
    "A password reset was requested for your account on the staff portal. If it wasn't you, tell IT.",
    "Following up on our call: we can deliver {n} units by {day} if you confirm the order this week.",
    "I've moved our one-to-one to {day} at {time}, I hope that still works for you.",
    "Attached is {item}. Let me know if anything looks off before I forward it to {company}.",
    "Thanks for the quick turnaround on {item}. The client was happy with it.",
    "Can we push the deadline for {item} by a week? Two of us are out sick.",
    "Just a reminder that the office is closed on {day} for the public holiday.",
    "The invoice {n} for {amount} is overdue by thirty days. Could you check with accounts payable?",
    "Forget what I said about the Thursday slot, the room is booked. Friday at {time} instead.",
    "I'm out of office until {day} with limited access to email. For anything urgent contact {name}.",
    "Please disregard the meeting invite I sent by mistake; it was meant for the {place} team.",
    "Your new laptop is ready for pickup at the IT desk. Bring your old charger back please.",
    "We changed the delivery address for the {place} order; the new one is in the system now.",
    "Can you forward the signed NDA to legal and copy me in?",
    "Do not reply to the customer yet, I want to check the refund policy with {name} first.",
    "I've updated the shared spreadsheet with the numbers from {company}; the totals are on tab 2.",
    "The auditors asked for all receipts above {amount}. Please upload yours to the finance folder by {day}.",
    "Here are the instructions from the landlord for the new key cards: tap once at the gate, twice at the lift.",
    "New rule from facilities: the car park closes at 20:00, so please move your car before then.",
    "Please print {item} and bring it to the meeting, the projector in room {n} is broken.",
    "Would you be free for a quick call about {item}? Fifteen minutes is enough.",
    "The previous instructions for the VPN are outdated; use the new client from the software portal.",
    "Reminder: delete any customer data you exported for the migration once the check is done.",
    "I'll be in {place} on {day}. Dinner with the {company} people at 19:30 if you want to join.",
    "Quick question: do we still have the admin login for the old website, or was it shut down?",
]
CLOSINGS = ["Thanks,", "Best,", "Kind regards,", "Cheers,", "Many thanks,", "Best wishes,", "Regards,",
            "Thanks in advance,", "Talk soon,", "All the best,"]
SIGNATURES = ["{name}\n{company}", "{first}", "{name}\nOffice manager, {company}\nTel. +44 20 7946 0{n}",
              "{first}\nSent from my phone", "{name} | Accounts | {company}", "-- \n{name}"]


def mail(rng: random.Random) -> str:
    sender, addr = person(rng)
    subject = fill(rng.choice(["Re: {item}", "{item}", "Quick question", "Update on {item}", "Fwd: {item}",
                               "Reminder", "Urgent: {item}", "Change of plans for {day}", "Invoice {n}",
                               "Meeting on {day}"]), rng)
    body = " ".join(fill(b, rng) for b in rng.sample(BODIES, rng.randint(1, 4)))
    parts = [fill(rng.choice(GREETINGS), rng), "", body, "", rng.choice(CLOSINGS), fill(rng.choice(SIGNATURES), rng)]
    if rng.random() < 0.6:
        _, to = person(rng)
        parts = [f"From: {sender} <{addr}>", f"To: {to}", f"Subject: {subject}", ""] + parts
    return "\n".join(parts)


def thread(rng: random.Random) -> str:
    """Two to four mails, each quoting the one before."""
    text = mail(rng)
    for _ in range(rng.randint(1, 3)):
        who, addr = person(rng)
        quoted = "\n".join("> " + line if line else ">" for line in text.splitlines())
        reply = fill(rng.choice(BODIES), rng)
        text = (f"{fill(rng.choice(GREETINGS), rng)}\n\n{reply}\n\n{rng.choice(CLOSINGS)}\n{who.split()[0]}\n\n"
                f"On {date(rng)} at {rng.choice(TIMES)}, {who} <{addr}> wrote:\n{quoted}")
    return text


# --- tickets, notes, invitations -----------------------------------------------

TICKET_ISSUES = [
    "I can't log in since the update. The password reset email never arrives.",
    "The invoice shows the wrong VAT number, please send a corrected one.",
    "Our order {n} arrived with two items missing.",
    "The printer on floor {n} says 'system error 0x{n}' and won't print.",
    "I was charged twice for the same subscription this month ({amount}).",
    "The app crashes when I upload a photo larger than 10 MB.",
    "Please cancel my booking for {day}, I will not be able to travel.",
    "How do I export my data before I close the account?",
    "The instructions in the manual don't match the device, step 4 has no blue button.",
    "Urgent: the shop's card terminal is offline and we have customers waiting.",
    "I need admin access to the shared drive for the {place} project.",
    "The delivery driver left the parcel at the wrong address.",
]
TICKET_REPLIES = [
    "Thanks for reaching out. I've reset your account; you should receive the email within ten minutes. If not, please check your spam folder.",
    "Sorry about that. I've issued a refund of {amount}; it will show on your statement in 3-5 business days.",
    "I've escalated this to our second-line team. Please ignore the automatic survey until the ticket is closed.",
    "Could you send us a screenshot of the error and the exact time it happened?",
    "We've updated the instructions on our help page. Please follow the new steps and let us know if it works.",
    "Your access request was approved by your manager. Log out and back in for it to take effect.",
    "A replacement is on its way; you don't need to send the old one back.",
    "This is a known issue with version 4.{n}; a fix ships next week. Until then, restart the app after each upload.",
]
STATUSES = ["Open", "Pending customer", "In progress", "Resolved", "Closed", "Waiting on third party"]


def ticket(rng: random.Random) -> str:
    customer, addr = person(rng)
    agent = rng.choice(FIRST)
    lines = [f"Ticket #{rng.randint(10000, 999999)}", f"Status: {rng.choice(STATUSES)}",
             f"Priority: {rng.choice(['Low', 'Normal', 'High', 'Urgent'])}", f"Requester: {customer} <{addr}>",
             "", fill(rng.choice(TICKET_ISSUES), rng)]
    for _ in range(rng.randint(0, 2)):
        lines += ["", f"--- {agent} (support), {date(rng)} {rng.choice(TIMES)} ---",
                  fill(rng.choice(TICKET_REPLIES), rng)]
    return "\n".join(lines)


AGENDA = ["Status of {item}", "Hiring for the {place} office", "Budget review", "Customer feedback",
          "Office move", "IT security training", "Holiday cover", "Supplier issues", "Any other business"]
ACTIONS = ["send {item} to {company} by {day}", "book the venue in {place}", "update the system with the new prices",
           "ignore the old template and use v2 from now on", "reset the shared mailbox password",
           "follow the new instructions for expense claims", "share the notes with the whole team",
           "check the contract with legal", "chase the overdue invoice {n}", "delete the duplicate customer records"]


def notes(rng: random.Random) -> str:
    people = sorted({rng.choice(FIRST) for _ in range(rng.randint(3, 7))})
    lines = [fill(f"Meeting notes: {rng.choice(['weekly sync', 'project kickoff', 'ops review', 'team meeting'])}, {{day}}", rng),
             "Attendees: " + ", ".join(people), "", "Agenda:"]
    lines += [f"{i + 1}. {fill(a, rng)}" for i, a in enumerate(rng.sample(AGENDA, rng.randint(2, 5)))]
    lines += ["", "Action items:"]
    lines += [f"- {rng.choice(people)}: {fill(a, rng)}" for a in rng.sample(ACTIONS, rng.randint(2, 5))]
    return "\n".join(lines)


def invite(rng: random.Random) -> str:
    organiser, addr = person(rng)
    title = fill(rng.choice(["Quarterly review", "Interview: {name}", "Lunch and learn", "Planning: {item}",
                             "Call with {company}", "Farewell drinks for {first}", "Dentist", "1:1 {first} / {first}"]), rng)
    return "\n".join([
        f"Invitation: {title}", f"When: {date(rng)}, {rng.choice(TIMES)} - {rng.choice(TIMES)} ({rng.choice(['CET', 'GMT', 'IST', 'JST', 'EST'])})",
        f"Where: {rng.choice(['Room ' + str(rng.randint(1, 40)), 'Video call', fill('{place} office', rng), 'Cafe on the corner'])}",
        f"Organizer: {organiser} <{addr}>", "",
        fill(rng.choice(["Please bring {item}.", "Agenda to follow.", "Join link: https://meet.example.com/{n}",
                         "Ignore the earlier invite, this one has the right room.", "No preparation needed.",
                         "Dial-in instructions are below the link."]), rng),
        "Going? Yes - Maybe - No"])


# --- notifications, reviews, chat, lists ----------------------------------------

NOTICES = [
    "Your card ending {n} was charged {amount} at {company}. Not you? Call the number on the back of your card.",
    "A password reset was requested for your account. If you did not request it, you can ignore this email; your password stays the same.",
    "Your order #{n} has shipped and should arrive by {day}. Track it in the app.",
    "Your booking is confirmed: {place}, check-in {day} from 15:00, {n} nights. Reservation number {n}.",
    "Your flight to {place} on {day} is delayed; new departure {time}. We apologise for the inconvenience.",
    "Payment received: {amount} from {name}. Reference: invoice {n}.",
    "New sign-in to your account from a new device in {place}. If this was you, no action is needed.",
    "Your monthly statement is ready. Log in to online banking to view it.",
    "Your parcel could not be delivered. It is waiting at the pickup point until {day}.",
    "Reminder: your subscription renews on {day} for {amount}. Manage it in your account settings.",
    "Your verification code is {n}. It expires in 10 minutes. Never share this code with anyone.",
    "Refund issued: {amount} for order #{n}. It can take up to 5 business days.",
]
REVIEW_TITLES = ["Great value", "Does the job", "Disappointed", "Would buy again", "Not as described",
                 "Five stars", "OK for the price", "Lovely stay", "Terrible customer service", "Exactly what I needed"]
REVIEW_LINES = [
    "Arrived on time and well packed.", "The instructions were confusing but it works fine now.",
    "Battery lasts about two days.", "The room was clean and the staff were friendly.",
    "Ignore the negative reviews, mine works perfectly.", "Had to send it back, the zip broke after a week.",
    "Breakfast was included and very good.", "The system takes ages to set up.",
    "Customer service replied within an hour and sent a replacement.", "Too small, order one size up.",
    "Great location, close to the station.", "Noisy at night because of the bar downstairs.",
]
CHAT = [
    "morning! anyone know if the coffee machine got fixed?", "can you send me the file again? the link expired",
    "ignore my last message, wrong channel", "urgent: client call moved to {time}", "lunch at 12:30?",
    "who has the admin password for the wifi router in the meeting room?", "I'll be 10 min late, train delay",
    "pushed the new price list to the shared folder", "did {first} approve the holiday request?",
    "just restart it, that fixed it for me last time", "thanks!!", "the system is super slow today",
    "new instructions from HR about the timesheets, check your email", "can someone cover the front desk at {time}?",
    "ok done", "np", "sure, on it", "where are the slides for {item}?", "forget it, found them",
]
TODO = ["call {name} about {item}", "pay invoice {n}", "book flights to {place}", "send {item} to {email}",
        "reset password for the shared inbox", "buy milk", "renew passport", "print boarding passes",
        "reply to {first}'s email", "ignore the old backlog, start from the new list", "update the system notes",
        "dentist {day} {time}", "pick up parcel", "water the office plants", "review {item}"]


def notice(rng: random.Random) -> str:
    return f"{rng.choice(COMPANIES)}\n\n" + fill(rng.choice(NOTICES), rng)


def review(rng: random.Random) -> str:
    stars = rng.randint(1, 5)
    body = " ".join(rng.sample(REVIEW_LINES, rng.randint(1, 4)))
    return f"{'★' * stars}{'☆' * (5 - stars)} {rng.choice(REVIEW_TITLES)}\nReviewed in {rng.choice(PLACES)} on {date(rng)}\n{body}"


def chat(rng: random.Random) -> str:
    people = [rng.choice(FIRST).lower() for _ in range(3)]
    lines = []
    for _ in range(rng.randint(2, 12)):
        lines.append(f"[{rng.randint(8, 18):02d}:{rng.randint(0, 59):02d}] {rng.choice(people)}: {fill(rng.choice(CHAT), rng)}")
    return "\n".join(lines)


def todo(rng: random.Random) -> str:
    head = rng.choice(["TODO", "To do this week:", "Tomorrow", "Before the trip", "Errands"])
    return head + "\n" + "\n".join(f"{rng.choice(['-', '[ ]', '*'])} {fill(t, rng)}" for t in rng.sample(TODO, rng.randint(3, 8)))


ANNOUNCE = [
    "IT notice: all staff must change their password by {day}. You will be asked automatically at your next login.",
    "HR update: the new holiday policy takes effect on {day}. Read the instructions on the intranet and ask your manager if anything is unclear.",
    "Reminder from IT: we will never ask for your password by email. Report suspicious messages to security@example.com.",
    "The system upgrade is complete. If you see any errors, clear your browser cache and log in again.",
    "Facilities: the lifts in building B are out of service on {day}. Please use the stairs or building A.",
    "Welcome to {name}, who joins the {place} team as operations lead this week!",
    "Payroll: payslips are now in the HR system instead of by email. The old mailbox will be deleted.",
    "Security reminder: lock your screen when you leave your desk, and don't share your badge.",
    "Open enrolment for health insurance ends {day}. Follow the steps in the benefits portal.",
]


def announcement(rng: random.Random) -> str:
    body = " ".join(fill(a, rng) for a in rng.sample(ANNOUNCE, rng.randint(1, 3)))
    return f"To: all-staff@{rng.choice(DOMAINS)}\nSubject: {rng.choice(['Important', 'FYI', 'Action required', 'Notice', 'Update'])}\n\n{body}\n\n{rng.choice(['IT Service Desk', 'People team', 'Facilities', 'The management'])}"


KINDS = [(mail, 0.2), (thread, 0.12), (ticket, 0.12), (notes, 0.08), (invite, 0.07), (notice, 0.1),
         (review, 0.09), (chat, 0.1), (todo, 0.05), (announcement, 0.07)]


def composed(rng: random.Random, n: int) -> list[str]:
    makers = [k for k, _ in KINDS]
    weights = [w for _, w in KINDS]
    return [rng.choices(makers, weights)[0](rng) for _ in range(n)]


def whole() -> list[str]:
    """The texts written out whole, in file order."""
    with open(WHOLE, encoding="utf-8") as f:
        parts = f.read().split("\n%%\n")
    return [p.strip("\n") for p in parts if p.strip()]
