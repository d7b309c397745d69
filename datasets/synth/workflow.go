package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// intent is one entry of the workflow domain's intent catalogue; the assistant
// states the code of the customer's current intent in its reasoning
// ("intent: I007"), and the row's intent_codes hold the ground truth.
type intent struct {
	code, name string
	tools      []string // tools the agent typically calls for it
	ask        []string // customer phrasings; %s is the object (order id, ...)
}

var intents = []intent{
	{"I001", "check order status", []string{"get_order"}, []string{"Hi, where is my order %s? It has been a week.", "Can you tell me the status of order %s?"}},
	{"I002", "cancel an order", []string{"get_order", "cancel_order"}, []string{"I want to cancel order %s, I ordered the wrong size.", "Please cancel %s before it ships."}},
	{"I003", "change the shipping address", []string{"get_order", "update_shipping_address"}, []string{"I moved last week, can you send %s to my new address?", "The address on %s is wrong, the apartment number is missing."}},
	{"I004", "track a shipment", []string{"track_shipment"}, []string{"The tracking for %s has not updated in four days.", "Which carrier has my package for %s?"}},
	{"I005", "report a missing package", []string{"track_shipment", "open_claim"}, []string{"Tracking says %s was delivered but there is nothing at my door.", "My parcel for %s never arrived."}},
	{"I006", "report a damaged item", []string{"get_order", "open_claim"}, []string{"The blender from %s arrived with a cracked jar.", "Half the plates in %s were broken."}},
	{"I007", "start a return", []string{"get_order", "create_return"}, []string{"I'd like to return the jacket from %s.", "How do I send back the shoes in %s?"}},
	{"I008", "check a refund", []string{"get_refund_status"}, []string{"I returned %s two weeks ago and still have no refund.", "When will the refund for %s reach my card?"}},
	{"I009", "ask about the return policy", []string{"lookup_policy"}, []string{"What is your return window for sale items like the ones in %s?", "Can I return something I already opened from %s?"}},
	{"I010", "exchange an item", []string{"get_order", "create_exchange"}, []string{"Can I swap the medium shirt in %s for a large?", "I want a different color for the lamp in %s."}},
	{"I011", "apply a coupon after purchase", []string{"get_order", "apply_coupon"}, []string{"I forgot to use my code SAVE15 on %s.", "Can you still apply my discount to %s?"}},
	{"I012", "dispute a charge", []string{"get_payment", "escalate_to_human"}, []string{"I was charged twice for %s.", "There is a charge for %s that I do not recognize."}},
	{"I013", "update the payment method", []string{"get_account", "update_payment_method"}, []string{"My card expired, please update the card for %s.", "Can I pay for %s with a different card?"}},
	{"I014", "reset a password", []string{"verify_identity", "reset_password"}, []string{"I can't log in to check %s, the password reset email never comes.", "Please help me reset my password, I need to see %s."}},
	{"I015", "update account email", []string{"verify_identity", "update_account"}, []string{"Please change the email on my account; the confirmation for %s went to my old one.", "I no longer use the email you have on file for %s."}},
	{"I016", "close the account", []string{"verify_identity", "escalate_to_human"}, []string{"After %s I want to close my account.", "Delete my account once %s is refunded."}},
	{"I017", "ask for delivery time", []string{"get_order", "track_shipment"}, []string{"Will %s arrive before Friday?", "How long does express shipping take for %s?"}},
	{"I018", "report a wrong item", []string{"get_order", "create_exchange"}, []string{"I received a completely different product in %s.", "The box for %s had someone else's item in it."}},
	{"I019", "ask about warranty", []string{"lookup_policy", "get_order"}, []string{"The vacuum from %s stopped working, is it under warranty?", "Does the warranty on %s cover the battery?"}},
	{"I020", "request an invoice", []string{"get_order", "send_invoice"}, []string{"I need a VAT invoice for %s.", "Can you email me a receipt for %s?"}},
	{"I021", "change delivery date", []string{"track_shipment", "reschedule_delivery"}, []string{"I'm away this week, can %s be delivered next Monday?", "Please hold %s until the weekend."}},
	{"I022", "ask about price match", []string{"lookup_policy"}, []string{"The item in %s is cheaper now, can I get the difference back?", "Do you price match for %s?"}},
	{"I023", "complain about service", []string{"escalate_to_human"}, []string{"This is the third time I contact you about %s and nobody helps.", "I'm very unhappy with how %s was handled."}},
	{"I024", "ask to speak to a human", []string{"escalate_to_human"}, []string{"Can I talk to a real person about %s?", "Transfer me to a manager about %s please."}},
	{"I025", "check loyalty points", []string{"get_account"}, []string{"Did I get points for %s?", "How many reward points do I have after %s?"}},
	{"I026", "report fraud", []string{"verify_identity", "escalate_to_human"}, []string{"I did not place order %s, someone used my account.", "There is an order %s I never made."}},
	{"I027", "split a shipment question", []string{"get_order", "track_shipment"}, []string{"Only part of %s arrived, where is the rest?", "Why did %s come in two boxes?"}},
	{"I028", "gift wrap or message", []string{"get_order", "update_order_notes"}, []string{"Can you add a gift message to %s?", "Is it too late to gift wrap %s?"}},
	{"I029", "confirm the end of the conversation", nil, []string{"Thanks, that's all I needed about %s.", "Great, that solves it for %s. Bye!"}},
	{"I030", "other request", []string{"lookup_policy"}, []string{"I have a general question about %s.", "Something else about %s: do you ship to Canada?"}},
}

// workflowTools are the tool definitions shared by every workflow trajectory.
const workflowTools = `[` +
	`{"type": "function", "function": {"name": "get_order", "description": "Look up an order by id: items, prices, payment, status and shipping address.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string", "description": "Order id, e.g. ORD-10293"}}, "required": ["order_id"]}}}, ` +
	`{"type": "function", "function": {"name": "list_orders", "description": "List the customer's recent orders, newest first.", "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}, "limit": {"type": "integer", "description": "At most this many orders (default 10)"}}, "required": ["customer_id"]}}}, ` +
	`{"type": "function", "function": {"name": "cancel_order", "description": "Cancel an order that has not shipped yet. Fails if any item has shipped.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "reason": {"type": "string", "enum": ["ordered_by_mistake", "wrong_item", "too_slow", "other"]}}, "required": ["order_id", "reason"]}}}, ` +
	`{"type": "function", "function": {"name": "update_shipping_address", "description": "Change the shipping address of an order that has not shipped.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "address": {"type": "object", "properties": {"line1": {"type": "string"}, "line2": {"type": "string"}, "city": {"type": "string"}, "postal_code": {"type": "string"}, "country": {"type": "string"}}, "required": ["line1", "city", "postal_code", "country"]}}, "required": ["order_id", "address"]}}}, ` +
	`{"type": "function", "function": {"name": "track_shipment", "description": "Carrier, tracking number, scan events and estimated delivery of an order's shipments.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}, ` +
	`{"type": "function", "function": {"name": "reschedule_delivery", "description": "Ask the carrier to deliver on another date (only for carriers that support it).", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "date": {"type": "string", "description": "YYYY-MM-DD"}}, "required": ["order_id", "date"]}}}, ` +
	`{"type": "function", "function": {"name": "open_claim", "description": "Open a claim for a lost or damaged shipment.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "kind": {"type": "string", "enum": ["lost", "damaged"]}, "details": {"type": "string"}}, "required": ["order_id", "kind"]}}}, ` +
	`{"type": "function", "function": {"name": "create_return", "description": "Create a return for items of a delivered order and email a prepaid label.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "item_ids": {"type": "array", "items": {"type": "string"}}, "reason": {"type": "string"}}, "required": ["order_id", "item_ids"]}}}, ` +
	`{"type": "function", "function": {"name": "create_exchange", "description": "Exchange items of a delivered order for another variant of the same product.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "item_id": {"type": "string"}, "new_variant": {"type": "string"}}, "required": ["order_id", "item_id", "new_variant"]}}}, ` +
	`{"type": "function", "function": {"name": "get_refund_status", "description": "Refunds of an order: amount, method, state and expected date.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}, ` +
	`{"type": "function", "function": {"name": "get_payment", "description": "Payment records and charges of an order.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}, ` +
	`{"type": "function", "function": {"name": "apply_coupon", "description": "Apply a coupon to a recent order; refunds the difference if the coupon is valid.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "code": {"type": "string"}}, "required": ["order_id", "code"]}}}, ` +
	`{"type": "function", "function": {"name": "lookup_policy", "description": "Search the policy handbook (returns, warranty, price match, shipping, privacy).", "parameters": {"type": "object", "properties": {"topic": {"type": "string"}, "question": {"type": "string"}}, "required": ["topic"]}}}, ` +
	`{"type": "function", "function": {"name": "get_account", "description": "The customer's account: contact details, tier, loyalty points, payment methods.", "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}}, "required": ["customer_id"]}}}, ` +
	`{"type": "function", "function": {"name": "verify_identity", "description": "Check the customer's identity with the email on file and the last four digits of a card.", "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}, "email": {"type": "string"}, "card_last4": {"type": "string"}}, "required": ["customer_id", "email"]}}}, ` +
	`{"type": "function", "function": {"name": "update_account", "description": "Change the account's email or phone number (identity must be verified first).", "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}, "email": {"type": "string"}, "phone": {"type": "string"}}, "required": ["customer_id"]}}}, ` +
	`{"type": "function", "function": {"name": "update_payment_method", "description": "Replace the default card of the account with a new tokenized card.", "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}, "card_token": {"type": "string"}}, "required": ["customer_id", "card_token"]}}}, ` +
	`{"type": "function", "function": {"name": "reset_password", "description": "Send a password reset link to the verified email.", "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}}, "required": ["customer_id"]}}}, ` +
	`{"type": "function", "function": {"name": "send_invoice", "description": "Email the invoice of an order, optionally with a company VAT id.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "vat_id": {"type": "string"}}, "required": ["order_id"]}}}, ` +
	`{"type": "function", "function": {"name": "update_order_notes", "description": "Add a gift message or delivery note to an order that has not shipped.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "note": {"type": "string"}}, "required": ["order_id", "note"]}}}, ` +
	`{"type": "function", "function": {"name": "escalate_to_human", "description": "Hand the conversation to a human agent with a summary; use for disputes, fraud, account closure and repeated complaints.", "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}, "queue": {"type": "string", "enum": ["billing", "fraud", "accounts", "complaints", "general"]}, "summary": {"type": "string"}}, "required": ["queue", "summary"]}}}` +
	`]`

// workflowSystem is the shared system prompt of every workflow trajectory: the
// agent's role, the business rules and the intent catalogue.
func workflowSystem() string {
	var b strings.Builder
	b.WriteString(`You are Nora, the customer support agent of Lumen Home, an online shop for furniture, kitchenware and home electronics. You help customers by chat. You can read and change orders, shipments, returns, refunds and accounts only through the tools you are given.

# How to work
- Greet the customer once, then get to the point. Be friendly, short and precise.
- Before any change to an order or an account, read the current state with a tool and confirm the change with the customer in plain words.
- Never invent an order id, a tracking number, an amount or a date. If you do not know it, look it up or ask.
- Ask for one missing piece of information at a time.
- Make at most one change per tool call, and tell the customer what you changed.
- When a tool fails, explain the problem without internal codes and offer the next step.

# Identity
- Orders and shipments can be discussed with anyone who gives a valid order id and the email on the order.
- Account changes (email, phone, payment method, password, closure) need verify_identity to succeed first, in the same conversation.
- Never read out a full card number, a full address of someone else, or a password.

# Orders and cancellation
- An order can be cancelled while its status is "placed" or "packing". Once any item is "shipped", offer a return instead.
- Address changes are allowed until the order ships. Confirm the full new address back to the customer before calling update_shipping_address.
- Gift messages and delivery notes can be added until the order ships; at most 200 characters.

# Shipping and delivery
- Standard delivery takes 3 to 5 working days, express 1 to 2, bulky items 5 to 10 with a delivery slot.
- If tracking shows no scan for 5 working days, or "delivered" but the customer has nothing, open a claim with open_claim (kind "lost") and tell the customer a replacement or refund follows within 3 working days of the carrier's answer.
- Damaged items: ask for a short description; photos are optional. Open a claim (kind "damaged"). Customers keep damaged items unless the carrier asks for them.
- Delivery can be rescheduled only for carriers that support it; track_shipment says so.

# Returns, exchanges and refunds
- Most items can be returned within 30 days of delivery, unused and in the original packaging. Sale items: 14 days. Mattresses and opened small electricals: only when faulty.
- Exchanges are for another size or color of the same product, subject to stock. Otherwise do a return and a new order.
- Refunds go to the original payment method within 5 to 7 working days after the return is received. Store credit is instant if the customer prefers it.
- Price match: within 14 days of purchase, if our own price dropped, refund the difference once per item. Competitor prices are not matched.
- Coupons can be applied after purchase within 7 days if the coupon was valid on the order date.

# Warranty
- Electricals have a 2-year warranty from delivery; batteries 1 year. Misuse and wear are not covered. Use lookup_policy for details and open a return marked as faulty when covered.

# Payments and disputes
- Duplicate or unknown charges: read get_payment first. Pre-authorizations disappear within 7 days; explain that. Real duplicates and unrecognized orders go to a human (escalate_to_human, queue "billing" or "fraud").
- Fraud reports: verify identity, then escalate to "fraud" at once; do not change the account yourself.

# Escalation
- Escalate when the customer asks for a human twice, for disputes and fraud, for account closure, or after a third contact about the same problem. Write a summary a colleague can act on without re-asking.

# Loyalty
- Customers earn 1 point per currency unit spent, credited 30 days after delivery. Points expire after 2 years. Gold tier (over 2,000 points a year) gets free express shipping.

# Intent codes
Before every reply and every tool call, decide the customer's current intent and state it in your reasoning on its own line as "intent: <code>", using exactly one code from this list:
`)
	for _, in := range intents {
		fmt.Fprintf(&b, "- %s: %s\n", in.code, in.name)
	}
	b.WriteString(`If the customer raises a new topic, switch to its code. If a message fits several codes, choose the one that drives your next action.

# Style
- Plain text, no markdown headings. Use short paragraphs or a short list for several items.
- Amounts with the currency, dates as "Tuesday 14 May".
- End with a question only when you need something from the customer.`)
	return b.String()
}

// customer is the persona of one workflow conversation.
type customer struct {
	id, name, email string
	orders          []string
}

var firstNames = []string{"Ana", "Ben", "Chloe", "Dev", "Elif", "Farah", "Gus", "Hana", "Ivan", "Jules", "Kofi", "Lena", "Mateo", "Nia", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tomas", "Uma", "Viktor", "Wen", "Yara", "Zoe"}
var lastNames = []string{"Alvarez", "Brooks", "Chen", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kowalski", "Larsen", "Moreau", "Novak", "Okafor", "Patel", "Rossi", "Silva", "Tanaka", "Weber"}
var products = []string{"oak side table", "linen duvet cover", "espresso machine", "cast iron skillet", "floor lamp", "robot vacuum", "ceramic dinner set", "office chair", "wool rug", "air purifier", "chef's knife set", "bookshelf", "kettle", "blender", "desk lamp"}

// workflowOSL is the log-normal (median, sigma) of a workflow assistant turn's
// output length in tokens; calibrated like codingOSL.
const (
	workflowOSLMedian = 337.0
	workflowOSLSigma  = 0.6
)

// workflowConversation generates workflow trajectory number n (its id is
// sim_NNNNNN) with the given number of client turns.
func workflowConversation(r *rand.Rand, n, clientTurns int, system string) []row {
	id := fmt.Sprintf("sim_%06d", n)
	first, last := pick(r, firstNames), pick(r, lastNames)
	c := customer{id: fmt.Sprintf("CUS-%05d", r.IntN(100000)), name: first + " " + last,
		email: strings.ToLower(first+"."+last) + "@example.com"}
	for range 1 + r.IntN(3) {
		c.orders = append(c.orders, fmt.Sprintf("ORD-%05d", r.IntN(100000)))
	}
	cur := pick(r, intents[:28])
	order := pick(r, c.orders)
	rows := make([]row, 0, 2*clientTurns)
	msg := fmt.Sprintf(pick(r, cur.ask), order)
	if r.IntN(2) == 0 {
		msg = fmt.Sprintf("Hello, this is %s (%s). ", c.name, c.email) + msg
	}
	rows = append(rows, row{ConversationID: id, Turn: 1, Role: roleUser, Content: &msg, System: system, Tools: workflowTools})
	prevTool, calls, callN := false, 0, 0
	for i := range clientTurns {
		turn := len(rows) + 1
		final := i == clientTurns-1
		// Call a tool after a customer message usually, after a tool result
		// sometimes, never more than three times in a row, and never as the last
		// assistant turn.
		call := !final && calls < 3 && ((!prevTool && r.IntN(100) < 62) || (prevTool && r.IntN(100) < 22))
		codes := []string{cur.code}
		if r.IntN(8) == 0 {
			codes = append(codes, pick(r, intents).code)
		}
		target := int(logNormal(r, workflowOSLMedian, workflowOSLSigma))
		a := row{ConversationID: id, Turn: turn, Role: roleAssistant, IntentCodes: codes}
		var res string
		if call && len(cur.tools) > 0 {
			name := cur.tools[min(calls, len(cur.tools)-1)]
			args := toolArgs(r, name, c, order)
			callN++
			a.ToolCalls = []toolCall{{ID: fmt.Sprintf("call_%d_%06x", callN, r.Uint32()&0xffffff), Type: "function", Function: toolFunction{Name: name, Arguments: args}}}
			target -= approxTokens(args) + 12
			if r.IntN(3) == 0 {
				s := pick(r, []string{"Let me check that for you.", "One moment while I look this up.", "I'll take a look at that now."})
				a.Content = &s
				target -= approxTokens(s)
			}
			res = toolOutput(r, name, c, order)
		} else {
			call = false
			s := reply(r, cur, c, order, max(30, target/4))
			a.Content = &s
			target -= approxTokens(s)
		}
		a.ReasoningContent = workflowReasoning(r, cur, c, order, max(12, target))
		rows = append(rows, a)
		if final {
			break
		}
		if call {
			calls++
			d := toolDelay(r)
			rows = append(rows, row{ConversationID: id, Turn: turn + 1, Role: roleTool, Tools: workflowTools, DelaySeconds: &d,
				ToolResults: []toolResult{{ToolCallID: a.ToolCalls[0].ID, Content: res}}})
			prevTool = true
			continue
		}
		calls, prevTool = 0, false
		// The customer answers: the same topic, or a new one, or closing words near
		// the end.
		switch {
		case i >= clientTurns-3 && r.IntN(3) == 0:
			cur = intents[28]
		case r.IntN(100) < 35:
			cur = pick(r, intents[:28])
			order = pick(r, c.orders)
		}
		m := fmt.Sprintf(pick(r, cur.ask), order)
		if r.IntN(3) == 0 {
			m = pick(r, []string{"Yes, please go ahead. ", "Okay. ", "That's right. ", "Hmm, not quite. ", "Sure, my email is " + c.email + ". "}) + m
		}
		d := userDelay(r)
		rows = append(rows, row{ConversationID: id, Turn: turn + 1, Role: roleUser, Content: &m, Tools: workflowTools, DelaySeconds: &d})
	}
	return rows
}

func toolArgs(r *rand.Rand, name string, c customer, order string) string {
	switch name {
	case "list_orders", "get_account", "reset_password":
		return mustJSON(struct {
			CustomerID string `json:"customer_id"`
		}{c.id})
	case "verify_identity":
		return mustJSON(struct {
			CustomerID string `json:"customer_id"`
			Email      string `json:"email"`
			Last4      string `json:"card_last4"`
		}{c.id, c.email, fmt.Sprintf("%04d", r.IntN(10000))})
	case "escalate_to_human":
		return mustJSON(struct {
			CustomerID string `json:"customer_id"`
			Queue      string `json:"queue"`
			Summary    string `json:"summary"`
		}{c.id, pick(r, []string{"billing", "fraud", "accounts", "complaints", "general"}), fmt.Sprintf("Customer %s about %s: %s.", c.name, order, pick(r, []string{"reports a duplicate charge", "asks for a manager after two contacts", "reports an order they did not place", "wants the account closed after the refund"}))})
	case "lookup_policy":
		return mustJSON(struct {
			Topic    string `json:"topic"`
			Question string `json:"question"`
		}{pick(r, []string{"returns", "warranty", "price_match", "shipping"}), "Does this apply to " + pick(r, products) + "?"})
	default:
		return mustJSON(struct {
			OrderID string `json:"order_id"`
		}{order})
	}
}

func toolOutput(r *rand.Rand, name string, c customer, order string) string {
	var b strings.Builder
	switch name {
	case "track_shipment":
		fmt.Fprintf(&b, `{"order_id": %q, "carrier": %q, "tracking_number": "%d", "can_reschedule": %t, "events": [`, order, pick(r, []string{"DHL", "UPS", "PostNord", "DPD", "GLS"}), 100000000+r.IntN(900000000), r.IntN(2) == 0)
		for i := range 2 + r.IntN(8) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"time": "2026-05-%02dT%02d:%02d:00Z", "place": %q, "status": %q}`, 1+r.IntN(28), r.IntN(24), r.IntN(60), pick(r, []string{"Hamburg hub", "Leipzig hub", "Local depot", "Out for delivery", "Sorting center"}), pick(r, []string{"in_transit", "arrived", "departed", "delivery_attempted", "delivered"}))
		}
		fmt.Fprintf(&b, `], "estimated_delivery": "2026-05-%02d"}`, 1+r.IntN(28))
	case "lookup_policy":
		fmt.Fprintf(&b, `{"topic": "policy", "sections": [`)
		for i := range 1 + r.IntN(4) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"id": "P-%d", "text": "Items must be returned within %d days of delivery in their original packaging; %s are excluded unless faulty. Refunds are issued to the original payment method within %d working days after the return is received."}`, 100+r.IntN(900), pick(r, []int{14, 30}), pick(r, products), 5+r.IntN(3))
		}
		b.WriteString("]}")
	case "get_account", "verify_identity":
		fmt.Fprintf(&b, `{"customer_id": %q, "name": %q, "email": %q, "verified": true, "tier": %q, "points": %d, "cards": [{"brand": "visa", "last4": "%04d", "expires": "%02d/%d"}]}`, c.id, c.name, c.email, pick(r, []string{"standard", "gold"}), r.IntN(5000), r.IntN(10000), 1+r.IntN(12), 2026+r.IntN(4))
	default:
		fmt.Fprintf(&b, `{"order_id": %q, "customer_id": %q, "status": %q, "placed": "2026-04-%02d", "items": [`, order, c.id, pick(r, []string{"placed", "packing", "shipped", "delivered", "returned"}), 1+r.IntN(28))
		total := 0
		for i := range 1 + r.IntN(5) {
			if i > 0 {
				b.WriteString(", ")
			}
			p := 9 + r.IntN(400)
			total += p
			fmt.Fprintf(&b, `{"item_id": "IT-%d", "name": %q, "qty": 1, "price": "%d.%02d EUR", "shipped": %t}`, 1000+r.IntN(9000), pick(r, products), p, r.IntN(100), r.IntN(2) == 0)
		}
		fmt.Fprintf(&b, `], "total": "%d.00 EUR", "result": %q}`, total, pick(r, []string{"ok", "ok", "ok", "not_allowed: order already shipped", "ok: change applied"}))
	}
	return b.String()
}

func workflowReasoning(r *rand.Rand, cur intent, c customer, order string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The customer wants to %s.\nintent: %s\n", cur.name, cur.code)
	forms := []func() string{
		func() string {
			return fmt.Sprintf("Order %s is the one in question; I should read its current state before promising anything.", order)
		},
		func() string {
			return fmt.Sprintf("The rules say changes are only allowed before the order ships, so the status of %s decides what I can offer.", order)
		},
		func() string {
			return fmt.Sprintf("%s already gave the email %s, which matches the account %s, so the identity check can use it.", c.name, c.email, c.id)
		},
		func() string {
			return "If the tool reports that the item has shipped, the right path is a return rather than a cancellation, and I should explain that without internal codes."
		},
		func() string {
			return fmt.Sprintf("The refund would go back to the original card within 5 to 7 working days; store credit would be instant if %s prefers it.", strings.Fields(c.name)[0])
		},
		func() string {
			return "I must not invent a tracking number or a date, so I will only quote what the tool returned."
		},
		func() string {
			return "This looks like a case where escalation is justified: the customer has asked twice and the problem involves a payment."
		},
		func() string {
			return fmt.Sprintf("The %s is covered by the 30-day window if it is unused; sale items would only have 14 days.", pick(r, products))
		},
		func() string {
			return "I should confirm the change in plain words and ask for a yes before calling the tool that modifies the order."
		},
		func() string {
			return "Keep the answer short: one sentence on what I found, one on what happens next."
		},
	}
	for approxTokens(b.String()) < n {
		b.WriteString(pick(r, forms)())
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}

func reply(r *rand.Rand, cur intent, c customer, order string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Thanks, %s. ", strings.Fields(c.name)[0])
	forms := []func() string{
		func() string {
			return fmt.Sprintf("I checked order %s: it is on its way and should arrive by Thursday.", order)
		},
		func() string {
			return fmt.Sprintf("I've started the return for the %s in %s; a prepaid label is on its way to %s.", pick(r, products), order, c.email)
		},
		func() string {
			return "Your refund will reach the original card within 5 to 7 working days after we receive the item."
		},
		func() string {
			return fmt.Sprintf("Unfortunately %s has already shipped, so I can't cancel it, but you can return it for free within 30 days.", order)
		},
		func() string {
			return "I've passed this to a colleague in our billing team with a full summary; they will email you within one working day."
		},
		func() string { return "Could you confirm the full new address, including the postal code?" },
		func() string { return "Is there anything else I can help you with today?" },
		func() string {
			return fmt.Sprintf("I've opened a claim with the carrier for %s; you'll hear from us within 3 working days.", order)
		},
	}
	for approxTokens(b.String()) < n {
		b.WriteString(pick(r, forms)())
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}
