/* raw_syn: writes a TCP SYN as a raw Ethernet frame on the uplink, the way a guest's root can,
 * bypassing the guest's own routing. Used by test_network.rs to show that such a frame for
 * the host's loopback never reaches it (the network guard drops it) while the same frame for
 * the host's outbound address does (the control that the frame is sound).
 *
 * usage: raw_syn DEST_IPV4 PORT   (run as root in the guest; built static on the host) */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The one's-complement sum of big-endian 16-bit words, not yet folded. */
static uint32_t add(uint32_t acc, const unsigned char *p, int len) {
  for (; len > 1; p += 2, len -= 2) acc += (uint32_t)(p[0] << 8 | p[1]);
  if (len) acc += (uint32_t)(p[0] << 8);
  return acc;
}

static uint16_t checksum(uint32_t acc) {
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  return htons((uint16_t)~acc);
}

/* The gateway's MAC from the ARP table, or broadcast when it is not there yet. */
static void gateway_mac(unsigned char mac[6]) {
  memset(mac, 0xff, 6);
  FILE *arp = fopen("/proc/net/arp", "r");
  if (!arp) return;
  char line[256], ip[64], hw[64];
  while (fgets(line, sizeof line, arp)) {
    if (sscanf(line, "%63s %*s %*s %63s", ip, hw) == 2 && strcmp(ip, "10.0.2.2") == 0) {
      unsigned int m[6];
      if (sscanf(hw, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) == 6)
        for (int i = 0; i < 6; i++) mac[i] = (unsigned char)m[i];
    }
  }
  fclose(arp);
}

/* The interface of the default route (eth0 on the test guest, ens3 or the like on Debian). */
static void uplink(char name[IFNAMSIZ]) {
  strcpy(name, "eth0");
  FILE *routes = fopen("/proc/net/route", "r");
  if (!routes) return;
  char line[256], iface[64], dest[64];
  while (fgets(line, sizeof line, routes)) {
    if (sscanf(line, "%63s %63s", iface, dest) == 2 && strcmp(dest, "00000000") == 0 &&
        strlen(iface) < IFNAMSIZ) {
      strcpy(name, iface);
      break;
    }
  }
  fclose(routes);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: raw_syn DEST_IPV4 PORT\n");
    return 2;
  }
  struct in_addr dst;
  if (inet_pton(AF_INET, argv[1], &dst) != 1) return 2;
  uint16_t port = (uint16_t)atoi(argv[2]);

  int fd = socket(AF_PACKET, SOCK_RAW, htons(0x0800));
  if (fd < 0) { perror("socket"); return 1; }
  char name[IFNAMSIZ];
  uplink(name);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, name, IFNAMSIZ);
  if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) { perror("SIOCGIFHWADDR"); return 1; }
  unsigned char own_mac[6];
  memcpy(own_mac, ifr.ifr_hwaddr.sa_data, 6);
  if (ioctl(fd, SIOCGIFADDR, &ifr) < 0) { perror("SIOCGIFADDR"); return 1; }
  struct in_addr src = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr;
  int index = (int)if_nametoindex(name);

  unsigned char frame[14 + 20 + 20];
  memset(frame, 0, sizeof frame);
  gateway_mac(frame);
  memcpy(frame + 6, own_mac, 6);
  frame[12] = 0x08;
  frame[13] = 0x00;

  unsigned char *ip = frame + 14;
  ip[0] = 0x45;                 /* IPv4, 5 words of header */
  ip[3] = 40;                   /* total length */
  ip[6] = 0x40;                 /* don't fragment */
  ip[8] = 64;                   /* TTL */
  ip[9] = 6;                    /* TCP */
  memcpy(ip + 12, &src, 4);
  memcpy(ip + 16, &dst, 4);
  uint16_t sum = checksum(add(0, ip, 20));
  memcpy(ip + 10, &sum, 2);

  unsigned char *tcp = ip + 20;
  uint16_t sport = htons((uint16_t)(40000 + getpid() % 20000)), dport = htons(port);
  memcpy(tcp, &sport, 2);
  memcpy(tcp + 2, &dport, 2);
  uint32_t seq = htonl(0x5eed0001);
  memcpy(tcp + 4, &seq, 4);
  tcp[12] = 5 << 4;             /* 5 words of header */
  tcp[13] = 0x02;               /* SYN */
  tcp[14] = 0xfa;               /* window 64240 */
  tcp[15] = 0xf0;
  unsigned char pseudo[12];
  memcpy(pseudo, &src, 4);
  memcpy(pseudo + 4, &dst, 4);
  pseudo[8] = 0;
  pseudo[9] = 6;
  pseudo[10] = 0;
  pseudo[11] = 20;
  sum = checksum(add(add(0, pseudo, 12), tcp, 20));
  memcpy(tcp + 16, &sum, 2);

  struct sockaddr_ll to;
  memset(&to, 0, sizeof to);
  to.sll_family = AF_PACKET;
  to.sll_ifindex = index;
  to.sll_halen = 6;
  memcpy(to.sll_addr, frame, 6);
  /* Three times, a little apart, as a SYN is resent when no answer comes. */
  for (int i = 0; i < 3; i++) {
    if (sendto(fd, frame, sizeof frame, 0, (struct sockaddr *)&to, sizeof to) < 0) {
      perror("sendto");
      return 1;
    }
    usleep(300000);
  }
  printf("sent\n");
  return 0;
}
