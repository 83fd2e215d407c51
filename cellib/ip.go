// This file holds Kubernetes' IP library (kubernetes.net.ip). cel-go's
// network extension has the same functions but other error messages, an
// isMask Kubernetes lacks, and false rather than an error for comparing an
// IP with another type, so annex has its own.

package cellib

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// IPType is the CEL type of ip()'s result, net.IP (an opaque type, so
// type(ip('1.2.3.4')) == net.IP).
var IPType = cel.OpaqueType("net.IP")

// IP returns the IP library. An address is IPv4 or IPv6 as net/netip
// parses it: no IPv4-mapped IPv6 addresses, no zones, no leading zeros.
//
//	ip(<string>) net.IP                error `IP Address "..." parse error during conversion from string: ...`
//	isIP(<string>) bool
//	ip.isCanonical(<string>) bool      the string is the address's canonical form; error if not an address
//	<net.IP>.family() int              4 or 6
//	<net.IP>.isUnspecified() bool      0.0.0.0 or ::
//	<net.IP>.isLoopback() bool
//	<net.IP>.isLinkLocalMulticast() bool
//	<net.IP>.isLinkLocalUnicast() bool
//	<net.IP>.isGlobalUnicast() bool
//	string(<net.IP>) string
//
// Examples:
//
//	ip('127.0.0.1').isLoopback()           // true
//	ip.isCanonical('2001:DB8::ABCD')       // false
func IP() cel.EnvOption {
	member := func(name, id string, out *cel.Type, f func(netip.Addr) ref.Val) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, []*cel.Type{IPType}, out, cel.UnaryBinding(func(v ref.Val) ref.Val {
			ip, ok := v.(ipVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return f(ip.Addr)
		})))
	}
	pred := func(f func(netip.Addr) bool) func(netip.Addr) ref.Val {
		return func(a netip.Addr) ref.Val { return types.Bool(f(a)) }
	}
	return cel.Lib(&library{name: "kubernetes.net.ip", options: []cel.EnvOption{
		cel.Types(IPType),
		cel.Function("ip", cel.Overload("string_to_ip", []*cel.Type{cel.StringType}, IPType, cel.UnaryBinding(stringToIP))),
		cel.Function("isIP", cel.Overload("is_ip", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, bad := stringArg(v)
			if bad != nil {
				return bad
			}
			_, err := parseIP(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("ip.isCanonical", cel.Overload("ip_is_canonical", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, bad := stringArg(v)
			if bad != nil {
				return bad
			}
			a, err := parseIP(s)
			if err != nil {
				return types.NewErr("%v", err)
			}
			return types.Bool(a.String() == s)
		}))),
		member("family", "ip_family", cel.IntType, func(a netip.Addr) ref.Val {
			switch {
			case a.Is4():
				return types.Int(4)
			case a.Is6():
				return types.Int(6)
			}
			return types.NewErr("IP address %q is not an IPv4 or IPv6 address", a.String())
		}),
		member("isUnspecified", "ip_is_unspecified", cel.BoolType, pred(netip.Addr.IsUnspecified)),
		member("isLoopback", "ip_is_loopback", cel.BoolType, pred(netip.Addr.IsLoopback)),
		member("isLinkLocalMulticast", "ip_is_link_local_multicast", cel.BoolType, pred(netip.Addr.IsLinkLocalMulticast)),
		member("isLinkLocalUnicast", "ip_is_link_local_unicast", cel.BoolType, pred(netip.Addr.IsLinkLocalUnicast)),
		member("isGlobalUnicast", "ip_is_global_unicast", cel.BoolType, pred(netip.Addr.IsGlobalUnicast)),
		cel.Function("string", cel.Overload("ip_to_string", []*cel.Type{IPType}, cel.StringType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			ip, ok := v.(ipVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return types.String(ip.Addr.String())
		}))),
		cel.CostModel(
			scan("string_to_ip", 0, 0, stringFactor, false),
			scan("is_ip", 0, 0, stringFactor, false),
			scan("ip_is_canonical", 0, 0, 2*stringFactor, false),
			fixed("ip_family", 1), fixed("ip_is_unspecified", 1), fixed("ip_is_loopback", 1),
			fixed("ip_is_link_local_multicast", 1), fixed("ip_is_link_local_unicast", 1), fixed("ip_is_global_unicast", 1),
		),
	}})
}

func stringToIP(v ref.Val) ref.Val {
	s, bad := stringArg(v)
	if bad != nil {
		return bad
	}
	a, err := parseIP(s)
	if err != nil {
		return types.NewErr("%v", err)
	}
	return ipVal{Addr: a}
}

// parseIP parses an address as Kubernetes' CEL does: netip's syntax, and
// neither zones nor IPv4-mapped IPv6 addresses.
func parseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("IP Address %q parse error during conversion from string: %v", s, err)
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("IP address %q with zone value is not allowed", s)
	}
	if a.Is4In6() {
		return netip.Addr{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return a, nil
}

// ipVal is a value of IPType.
type ipVal struct{ netip.Addr }

var _ ref.Val = ipVal{}

// ConvertToNative returns the netip.Addr, or its string.
func (d ipVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(d.Addr).AssignableTo(typeDesc) {
		return d.Addr, nil
	}
	if reflect.TypeOf("").AssignableTo(typeDesc) {
		return d.Addr.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'IP' to '%v'", typeDesc)
}

// ConvertToType converts to IPType, string or type.
func (d ipVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.StringType {
		return types.String(d.Addr.String())
	}
	return objectVal{IPType}.convert(d, t)
}

// Equal compares addresses; another type is an error, as in Kubernetes.
func (d ipVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(ipVal)
	if !ok {
		return types.ValOrErr(other, "no such overload")
	}
	return types.Bool(d.Addr == o.Addr)
}

// Type is IPType.
func (d ipVal) Type() ref.Type { return IPType }

// Value is the netip.Addr.
func (d ipVal) Value() any { return d.Addr }

// Size is the address's length in bytes (4 or 16), for cost.
func (d ipVal) Size() ref.Val { return types.Int(int(math.Ceil(float64(d.Addr.BitLen()) / 8))) }
